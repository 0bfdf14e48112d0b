#!/usr/bin/env bash
# The resolver benchmark's peers (bench/dns) print the line run_dns_bench.py
# parses, with every lookup counted once and the process's threads: asio's
# resolver adds one hidden thread, the pool its workers. The names are
# numeric, so no DNS server is asked and the test is hermetic.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

find_bin() {
  local path
  for path in "${TEST_SRCDIR:-}/libnet/bench/dns/$1" "${RUNFILES_DIR:-}/libnet/bench/dns/$1"; do
    [[ -x "$path" ]] && echo "$path" && return 0
  done
  fail "bench/dns/$1 not found in the runfiles"
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
printf '127.0.0.1\n::1\n' >"$scratch/names"

# ThreadSanitizer runs a background thread of its own in every process.
extra=0
[[ -z "${TSAN_OPTIONS:-}" ]] || extra=1

line_re='^lookups=([0-9]+) failed=([0-9]+) seconds=[0-9.]+ lookups_per_s=[0-9]+ cpu_s=[0-9.]+ threads=([0-9]+)$'

# check NAME OUTPUT LOOKUPS THREADS
check() {
  [[ "$2" =~ $line_re ]] || fail "$1: bad line: $2"
  [[ ${BASH_REMATCH[1]} == "$3" ]] || fail "$1: lookups != $3: $2"
  [[ ${BASH_REMATCH[2]} == 0 ]] || fail "$1: failed lookups: $2"
  [[ ${BASH_REMATCH[3]} == "$4" ]] || fail "$1: threads != $4: $2"
}

asio=$(find_bin asio_resolve_bench)
pool=$(find_bin getaddrinfo_pool_bench)

for inflight in 1 20; do
  out=$("$asio" --count 300 --inflight $inflight --names "$scratch/names") ||
    fail "asio_resolve_bench exited $?"
  check asio_resolve_bench "$out" 300 $((2 + extra))
  out=$("$pool" --count 300 --inflight $inflight --names "$scratch/names") ||
    fail "getaddrinfo_pool_bench exited $?"
  check getaddrinfo_pool_bench "$out" 300 $((5 + extra))
done
out=$("$pool" --count 50 --inflight 5 --threads 2 --name-pattern 127.0.0.%d --distinct 9) ||
  fail "getaddrinfo_pool_bench --threads 2 exited $?"
check "getaddrinfo_pool_bench --threads 2" "$out" 50 $((3 + extra))

for bin in "$asio" "$pool"; do
  status=0
  "$bin" --count 0 >/dev/null 2>&1 || status=$?
  [[ $status -eq 2 ]] || fail "$bin --count 0 exited $status, not 2"
  status=0
  "$bin" --names "$scratch/missing" >/dev/null 2>&1 || status=$?
  [[ $status -eq 2 ]] || fail "$bin with a missing --names file exited $status, not 2"
done
echo PASS
