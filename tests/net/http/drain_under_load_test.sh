#!/usr/bin/env bash
# Graceful drain under load, on both backends, without and with an I/O
# thread: http_server serves wrk (keep-alive, 30 connections) on /hello,
# gets SIGTERM about 1 s into the run, and must exit 0 within its drain
# deadline while no request that reached it is lost: wrk sees no read or
# timeout error and no non-2xx answer, and every write error it counts is
# a refused reconnect (below). The last answer on each connection carries
# Connection: close. A variant serves a 1 MiB file, so that responses are
# in flight (queued output) when the drain starts.
#
# Refused reconnects are expected: once the listening socket is closed,
# wrk reconnects each connection the server closed and is refused (nothing
# was accepted for it). wrk 4.1 connects without blocking, so a refusal
# surfaces as a failed write() of its next request and is counted as a
# *write* error, just like a request written to a connection the server
# reset. So wrk runs under strace, which records every write() that fails:
# each of wrk's write errors must be a write that failed with ECONNREFUSED.
# (Reads are not traced, which would slow wrk down a lot: a failed read is
# one of wrk's read errors, and there must be none.)
#
# A keep-alive connection idle when the drain starts gets --drain-grace to
# send its next request; wrk sends it as soon as it has read the answer,
# but under strace, with 30 connections on one thread of a busy machine,
# reading an answer (1 MiB of it) can lag by hundreds of ms, and by more
# than a second on a machine running several builds beside the test (seen
# once as 7 read errors on /big): the grace here is 3 s.
#
# DRAIN_RUNS=N repeats every case N times (default 1).
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

server=""
for path in "${TEST_SRCDIR:-}/libnet/examples/http/http_server" \
            "${RUNFILES_DIR:-}/libnet/examples/http/http_server"; do
  [[ -x "$path" ]] && server=$path && break
done
[[ -n "$server" ]] || fail "examples/http/http_server not found in the runfiles"
# shellcheck source=tests/net/drain_wrk_lib.sh
source "${server%/examples/http/http_server}/tests/net/drain_wrk_lib.sh"
command -v wrk >/dev/null || fail "wrk is not installed (tools/setup.sh installs it)"
command -v strace >/dev/null || fail "strace is not installed (tools/setup.sh installs it)"

work=$(mktemp -d)
server_pid=""
wrk_pid=""
cleanup() {
  [[ -n "$wrk_pid" ]] && kill "$wrk_pid" 2>/dev/null
  [[ -n "$server_pid" ]] && kill -KILL "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
head -c 1048576 /dev/zero >"$work/big"

# run_case BACKEND THREADS PATH: one loaded drain.
run_case() {
  local backend=$1 threads=$2 path=$3
  local what="--backend $backend --threads $threads $path"
  coproc SERVER { exec "$server" --address 127.0.0.1 --port 0 --backend "$backend" \
    --threads "$threads" --root "$work" --drain-timeout 10 --drain-grace 3000 2>&1; }
  server_pid=$SERVER_PID
  local server_out line=""
  exec {server_out}<&"${SERVER[0]}"
  read -t 20 -r line <&"$server_out" || fail "$what: server printed nothing in 20 s"
  [[ "$line" =~ listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]] || fail "$what: unexpected line: $line"
  local port=${BASH_REMATCH[1]}

  strace -f --seccomp-bpf -e trace=write -e status=failed -o "$work/wrk.strace" \
    wrk -t1 -c30 -d4s --latency "http://127.0.0.1:$port$path" >"$work/wrk.out" 2>&1 &
  wrk_pid=$!
  sleep 1  # load, not synchronisation: the drain must meet requests in flight
  kill -TERM "$server_pid"
  await_drained_exit "$what" http_server "$server_out"
}

for ((run = 0; run < ${DRAIN_RUNS:-1}; ++run)); do
  for backend in epoll uring; do
    for threads in 0 1; do
      run_case "$backend" "$threads" /hello
    done
    run_case "$backend" 1 /big
  done
done
echo PASS
