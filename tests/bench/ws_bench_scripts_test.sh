#!/usr/bin/env bash
# The run scripts of the WebSocket and HTTP-client benchmarks work end to
# end on short runs: run_ws_bench.py with libnet (both backends), the Beast
# peer and ws_load (every cell measured, none failed, its CSV complete), and
# run_loadgen_bench.py
# with wrk and libnet's loadgen on both backends against the nginx the script
# started (both tables filled in, no errors, the ratio to wrk computed, and
# the pool run reusing its 4 connections for all but 4 of 400 requests).
# Timings are never looked at. The HTTP half needs nginx and wrk; without
# them it is skipped, saying so.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

root=""
for path in "${TEST_SRCDIR:-}/libnet" "${RUNFILES_DIR:-}/libnet"; do
  [[ -f "$path/bench/websocket/run_ws_bench.py" ]] && root=$path && break
done
[[ -n "$root" ]] || fail "the run scripts are not in the runfiles"
python=/usr/bin/python3

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

"$python" "$root/bench/websocket/run_ws_bench.py" --no-build --bindir "$root" \
  --servers libnet-epoll,libnet-uring,beast --conns 1,3 --sizes 32,2000 --deflate off,on \
  --seconds 0.3 --warmup 0.1 --runs 1 --no-netns \
  --csv "$scratch/ws.csv" >"$scratch/ws.md" 2>"$scratch/ws.err" ||
  fail "run_ws_bench.py exited $?: $(tail -5 "$scratch/ws.err")"
grep -q "^- Machine: " "$scratch/ws.md" || fail "no machine line: $(cat "$scratch/ws.md")"
# A server's CPU time within a 0.3 s window may round to no clock tick at all
# on a loaded machine ("-"): a timing, not a failure.
rows=$(grep -Ec '^\| (libnet-epoll|libnet-uring|beast) \| [13] \| (32|2000) \| (off|on) \| [0-9]+ \| ([0-9.]+|-) \|' \
  "$scratch/ws.md") || true
[[ $rows -eq 24 ]] ||
  fail "expected 24 measured rows, got $rows: $(cat "$scratch/ws.md") $(tail -20 "$scratch/ws.err")"
[[ $(($(wc -l <"$scratch/ws.csv") - 1)) -eq 24 ]] || fail "expected 24 CSV rows"
! grep -q FAILED "$scratch/ws.err" || fail "a run failed: $(grep FAILED "$scratch/ws.err")"

skip=""
for file in bench/http/run_loadgen_bench.py bench/http/run_http_bench.py \
  bench/http/nginx.conf.in tools/make_test_certs.py; do
  [[ -f "$root/$file" ]] || skip="$file is not in the runfiles"
done
command -v wrk >/dev/null || skip="no wrk"
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || skip="no nginx"
if [[ -n "$skip" ]]; then
  echo "SKIP HTTP half: $skip"
  echo PASS
  exit 0
fi
"$python" "$root/bench/http/run_loadgen_bench.py" --no-build --bindir "$root" \
  --seconds 1 --runs 1 --pool-conns 4 --pool-requests 400 --no-netns \
  >"$scratch/http.md" 2>"$scratch/http.err" ||
  fail "run_loadgen_bench.py exited $?: $(tail -5 "$scratch/http.err")"
grep -Eq '^\| wrk \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| 0 \| - \| - \|$' "$scratch/http.md" ||
  fail "no wrk row: $(cat "$scratch/http.md")"
for backend in epoll uring; do
  grep -Eq "^\| loadgen-$backend \| [0-9]+ \| [0-9.]+ \| [0-9.]+ \| 0 \| [0-9.]+ \| [0-9.]+ \|$" \
    "$scratch/http.md" || fail "no loadgen-$backend row: $(cat "$scratch/http.md")"
  # 400 requests through a pool of 4: each connection opened once, the rest reused.
  grep -q "^| loadgen-$backend | 400 | 4 | 396 | 0 |$" "$scratch/http.md" ||
    fail "no pool row for $backend: $(cat "$scratch/http.md")"
done
echo PASS
