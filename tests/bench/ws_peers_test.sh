#!/usr/bin/env bash
# The WebSocket benchmark's peers (bench/websocket) do what run_ws_bench.py
# relies on: beast_ws_echo_server prints "beast_ws_echo_server listening on
# 127.0.0.1:PORT" for --port 0, echoes every message byte for byte with its
# type (small and 16 KiB, binary and text, with and without
# permessage-deflate; ws_load --verify checks each echo, inflating compressed
# ones) and exits 0 on SIGTERM; ws_load reports what it measured and exits
# non-zero against a server that corrupts its echoes or that is not there.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

find_file() {
  local path
  for path in "${TEST_SRCDIR:-}/libnet/$1" "${RUNFILES_DIR:-}/libnet/$1"; do
    [[ -e "$path" ]] && echo "$path" && return 0
  done
  fail "$1 not found in the runfiles"
}

load=$(find_file bench/websocket/ws_load)
beast=$(find_file bench/websocket/beast_ws_echo_server)
corrupt=$(find_file tests/bench/corrupt_ws_echo_server.py)

# Starts a server (the command line) as a coprocess and sets $port from its
# listening line (bounded wait). The coprocess's output descriptor is
# duplicated into $server_out: bash unsets SERVER and closes its descriptors
# once it has reaped the coprocess.
start_server() {
  coproc SERVER { exec "$@" 2>&1; }
  server_pid=$SERVER_PID
  exec {server_out}<&"${SERVER[0]}"
  local line=""
  read -t 20 -r line <&"$server_out" || fail "$1 printed nothing in 20 s"
  [[ "$line" =~ listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]] || fail "$1: unexpected line: $line"
  port=${BASH_REMATCH[1]}
}

# Stops the server with SIGTERM; it must exit 0 within 10 s. Its output
# reaching end of file is the sign that it has exited; `wait` then collects
# its status.
stop_server() {
  kill -TERM "$server_pid"
  local deadline=$((SECONDS + 10)) status=0 exited=0
  while ((SECONDS <= deadline)); do
    read -t 1 -r _ <&"$server_out" 2>/dev/null && continue
    # Above 128 is read's timeout; anything else is end of file.
    (($? <= 128)) && exited=1 && break
  done
  ((exited)) || fail "server still running 10 s after SIGTERM"
  exec {server_out}<&-
  wait "$server_pid" || status=$?
  [[ $status -eq 0 ]] || fail "server exited $status after SIGTERM"
}

# expect_clean OUTPUT: messages counted, none failed.
expect_clean() {
  [[ "$1" =~ messages:\ ([0-9]+)\ \ seconds:\ [0-9.]+\ \ messages/s:\ [0-9]+ ]] ||
    fail "no messages line: $1"
  ((BASH_REMATCH[1] > 0)) || fail "no message echoed: $1"
  [[ "$1" =~ latency_us:\ p50\ [0-9.]+\ \ p99\ [0-9.]+ ]] || fail "no latency line: $1"
  [[ "$1" =~ errors:\ 0 ]] || fail "errors: $1"
  [[ "$1" == *"window: start"*"window: end"* ]] || fail "no window marks: $1"
}

for deflate in "" --deflate; do
  start_server "$beast" --port 0 $deflate
  for size in 32 16384; do
    out=$("$load" --server 127.0.0.1:$port -c 2 -d 1 --size $size --verify $deflate 2>&1) ||
      fail "beast $deflate size $size: ws_load exited $?: $out"
    expect_clean "$out"
  done
  out=$("$load" --server 127.0.0.1:$port -c 2 -d 0.2 --size 100 --text --verify $deflate 2>&1) ||
    fail "beast $deflate --text: ws_load exited $?: $out"
  expect_clean "$out"
  stop_server
done

# A server that flips a byte of every echo: --verify must fail on the first
# one, compressed or not.
start_server /usr/bin/python3 "$corrupt"
for deflate in "" --deflate; do
  status=0
  out=$("$load" --server 127.0.0.1:$port -c 2 -d 1 --size 32 --verify $deflate 2>&1) ||
    status=$?
  [[ $status -eq 1 ]] || fail "ws_load --verify $deflate against a corrupting server exited $status"
  [[ "$out" == *"does not match"* && "$out" =~ errors:\ 2 ]] || fail "corrupt $deflate: $out"
done
kill -TERM "$server_pid"
exec {server_out}<&-
wait "$server_pid" || true

# Beast without --deflate declines the extension: ws_load --deflate says so.
start_server "$beast" --port 0
status=0
out=$("$load" --server 127.0.0.1:$port -c 1 -d 0.2 --size 32 --deflate 2>&1) || status=$?
[[ $status -eq 1 && "$out" == *"offered but not accepted"* ]] ||
  fail "--deflate against a server without it exited $status: $out"
stop_server

# Nobody listens on the port any more.
status=0
out=$("$load" --server 127.0.0.1:$port -c 1 -d 0.2 --size 32 2>&1) || status=$?
[[ $status -eq 1 && "$out" == *"connect: Connection refused"* ]] ||
  fail "ws_load against a closed port exited $status: $out"

status=0
"$beast" >/dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "beast_ws_echo_server without --port exited $status, not 2"
status=0
"$load" -c 1 >/dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "ws_load without --server exited $status, not 2"
echo PASS
