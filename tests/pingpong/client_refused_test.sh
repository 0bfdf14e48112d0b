#!/usr/bin/env bash
# Every ping-pong client (libnet on each backend, asio, libevent) pointed at a
# loopback port that refuses connections exits 1 at once, with a message on
# stderr naming the connect, the address (127.0.0.1:PORT) and "Connection
# refused", and prints no RESULT line: the benchmark runner tells a failed cell by the exit status.
# The libnet client runs several sessions on several loop threads, so the
# failure path tears down sessions on every thread. The port is held bound
# but not listening by refusing_port_main for the whole run; each run is
# bounded by `timeout`, far below the libnet client's 60 s connect timeout,
# so a client that hangs or waits fails the test.
set -euo pipefail

readonly BOUND=10  # seconds for the whole run of one client

bin() { echo "${TEST_SRCDIR}/libnet/$1"; }
REFUSING=$(bin tests/net/refusing_port_main)
PP_CLIENT=$(bin pingpong/pingpong_client)
ASIO_CLIENT=$(bin pingpong/asio/asio_pingpong_client)
LE_CLIENT=$(bin pingpong/libevent/libevent_pingpong_client)
TMP=${TEST_TMPDIR:-$(mktemp -d)}

failures=0
passes=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; passes=$((passes + 1)); }

# check NAME THREADS SESSIONS CLIENT_CMD...: the command gets
# "127.0.0.1 PORT THREADS 64 SESSIONS 1" appended.
check() {
  local name=$1 threads=$2 sessions=$3
  shift 3
  local out="$TMP/$name.out" err="$TMP/$name.err"
  local start status=0
  start=$(date +%s%N)
  timeout -k 5 "$BOUND" "$REFUSING" "$@" 127.0.0.1 '{port}' "$threads" 64 "$sessions" 1 \
    >"$out" 2>"$err" || status=$?
  local elapsedMs=$((($(date +%s%N) - start) / 1000000))
  if [[ $status -eq 124 || $status -eq 137 ]]; then
    fail "$name: still running after ${BOUND}s"
    return
  fi
  local port
  port=$(sed -n '1s/^port \([0-9][0-9]*\)$/\1/p' "$out")
  if [[ -z "$port" ]]; then
    fail "$name: no port from refusing_port_main: $(cat "$out" "$err")"
    return
  fi
  local problems=()
  [[ $status -eq 1 ]] || problems+=("exit status $status, wanted 1")
  grep -q "connect\b.* to 127\.0\.0\.1:$port\b.*Connection refused" "$err" ||
    problems+=("no 'connect to 127.0.0.1:$port ... Connection refused' on stderr")
  ! grep -q "^RESULT" "$out" || problems+=("a RESULT line was printed")
  ! grep -q "Sanitizer" "$err" || problems+=("sanitizer report")
  if [[ ${#problems[@]} -gt 0 ]]; then
    fail "$name: $(IFS=';'; echo "${problems[*]}"). stderr: $(tail -5 "$err")"
    return
  fi
  pass "$name, exit 1 after ${elapsedMs} ms: $(grep -m1 "connect" "$err")"
}

check libnet-epoll 1 1 "$PP_CLIENT" --backend epoll
check libnet-uring 1 1 "$PP_CLIENT" --backend uring
check libnet-epoll-threads 4 100 "$PP_CLIENT" --backend epoll
check libnet-uring-threads 4 100 "$PP_CLIENT" --backend uring
check asio 1 1 "$ASIO_CLIENT"
check asio-threads 4 100 "$ASIO_CLIENT"
check libevent 1 1 "$LE_CLIENT"
check libevent-sessions 1 100 "$LE_CLIENT"

echo "refused clients: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
