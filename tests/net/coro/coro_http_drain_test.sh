#!/usr/bin/env bash
# coro_http_server's graceful drain (SIGTERM), on both backends, without and
# with an I/O thread:
# - coro_http_drain_test.py: an idle keep-alive connection is closed at once,
#   a WebSocket gets 1001, a slow upload is answered with Connection: close,
#   the server exits 0 well within its deadline; also with --h2c (HTTP/1.1
#   on a port that sniffs for HTTP/2: its GOAWAY on SIGTERM is
#   coro_h2c_test's);
# - under wrk (keep-alive, 20 connections, /hello) with SIGTERM about 1 s in:
#   exit 0 within the deadline, no read or timeout error, no non-2xx answer,
#   and every write error of wrk's is a refused reconnect.
#
# As in tests/net/http/drain_under_load_test.sh (which explains it): wrk 4.1
# counts a reconnect refused once the listener is closed as a *write* error,
# so wrk runs under strace recording its failed write()s, and each of its
# write errors must be one that failed with ECONNREFUSED.
#
# DRAIN_RUNS=N repeats every case N times (default 1).
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

runfiles=${TEST_SRCDIR:-${RUNFILES_DIR:-}}/libnet
server=$runfiles/examples/http/coro_http_server
[[ -x "$server" ]] || fail "examples/http/coro_http_server not found in the runfiles"
# shellcheck source=tests/net/drain_wrk_lib.sh
source "$runfiles/tests/net/drain_wrk_lib.sh"
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

# wrk_case BACKEND THREADS: one drain under load.
wrk_case() {
  local backend=$1 threads=$2
  local what="wrk, --backend $backend --threads $threads"
  coproc SERVER { exec "$server" --address 127.0.0.1 --port 0 --backend "$backend" \
    --threads "$threads" --drain-timeout 10 2>&1; }
  server_pid=$SERVER_PID
  local server_out line=""
  exec {server_out}<&"${SERVER[0]}"
  read -t 20 -r line <&"$server_out" || fail "$what: server printed nothing in 20 s"
  [[ "$line" =~ listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]] || fail "$what: unexpected line: $line"
  local port=${BASH_REMATCH[1]}

  strace -f --seccomp-bpf -e trace=write -e status=failed -o "$work/wrk.strace" \
    wrk -t1 -c20 -d3s --latency "http://127.0.0.1:$port/hello" >"$work/wrk.out" 2>&1 &
  wrk_pid=$!
  sleep 1  # load, not synchronisation: the drain must meet requests in flight
  kill -TERM "$server_pid"
  await_drained_exit "$what" coro_http_server "$server_out"
}

for ((run = 0; run < ${DRAIN_RUNS:-1}; ++run)); do
  for backend in epoll uring; do
    for threads in 0 1; do
      timeout 60 python3 "$runfiles/tests/net/coro/coro_http_drain_test.py" "$server" \
        "$backend" "$threads" || fail "coro_http_drain_test.py ($backend, $threads threads)"
      wrk_case "$backend" "$threads"
    done
    timeout 60 python3 "$runfiles/tests/net/coro/coro_http_drain_test.py" "$server" \
      "$backend" 1 --h2c || fail "coro_http_drain_test.py ($backend, --h2c)"
  done
done
echo PASS
