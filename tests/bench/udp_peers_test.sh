#!/usr/bin/env bash
# The UDP benchmark's peers (bench/udp) do what run_udp_bench.py relies on:
# each server prints "listening on ADDR:PORT" for --port 0, echoes every
# datagram to its sender byte for byte (mixed sizes up to 65,507 bytes,
# several flows with several datagrams in flight), counts without echoing
# under --sink, and on SIGTERM prints its counters and exits 0; the floor
# client reports what it sent and received, and fails against a closed port.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

find_bin() {
  local path
  for path in "${TEST_SRCDIR:-}/libnet/bench/udp/$1" "${RUNFILES_DIR:-}/libnet/bench/udp/$1"; do
    [[ -x "$path" ]] && echo "$path" && return 0
  done
  fail "bench/udp/$1 not found in the runfiles"
}

client=$(find_bin floor_udp_client)

# field NAME LINE: the value of NAME=... in LINE.
field() {
  sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}

# Starts server binary $1 with the rest as its arguments as a coprocess and
# sets $port from its listening line (bounded wait). The coprocess's output
# descriptor is duplicated into $server_out: bash unsets SERVER and closes its
# descriptors once it has reaped the coprocess, which can happen before its
# last line is read.
start_server() {
  coproc SERVER { exec "$@" 2>&1; }
  server_pid=$SERVER_PID
  exec {server_out}<&"${SERVER[0]}"
  local line=""
  read -t 10 -r line <&"$server_out" || fail "$1 printed nothing in 10 s"
  [[ "$line" =~ ^listening\ on\ 127\.0\.0\.1:([0-9]+)$ ]] || fail "$1: unexpected line: $line"
  port=${BASH_REMATCH[1]}
}

# Stops the server with SIGTERM and sets $stop to its stop line.
stop_server() {
  kill -TERM "$server_pid"
  stop=""
  read -t 10 -r stop <&"$server_out" || fail "no stop line within 10 s of SIGTERM"
  local status=0
  exec {server_out}<&-
  wait "$server_pid" || status=$?
  [[ $status -eq 0 ]] || fail "server exited $status after SIGTERM"
  [[ "$stop" =~ ^received=[0-9]+\ bytes=[0-9]+\ echoed=[0-9]+\ dropped=[0-9]+$ ]] ||
    fail "bad stop line: $stop"
}

# expect_echo LINE COUNT: every datagram echoed and intact.
expect_echo() {
  [[ "$(field sent "$1")" == "$2" ]] || fail "sent != $2: $1"
  [[ "$(field received "$1")" == "$2" ]] || fail "received != $2: $1"
  for zero in lost truncated corrupt; do
    [[ "$(field $zero "$1")" == 0 ]] || fail "$zero != 0: $1"
  done
}

for name in floor_udp_echo_server asio_udp_echo_server; do
  server=$(find_bin $name)

  start_server "$server" --port 0
  # Several flows, several datagrams in flight each: a window small enough
  # for the default socket buffers, so nothing may be lost on loopback.
  out=$("$client" --server 127.0.0.1:$port --flows 4 --window 4 --size 1200 --count 2000 \
    --verify) || fail "$name: client exited $?: $out"
  expect_echo "$out" 2000
  # Every size up to the largest IPv4 datagram, one at a time.
  out=$("$client" --server 127.0.0.1:$port --sizes mixed --count 200 --verify) ||
    fail "$name: mixed sizes: client exited $?: $out"
  expect_echo "$out" 200
  # One-way datagrams are counted (their echoes go to a closed socket); an
  # echoed probe sent after them proves the server has read them all.
  out=$("$client" --server 127.0.0.1:$port --mode oneway --size 64 --count 100) ||
    fail "$name: oneway: client exited $?: $out"
  [[ "$(field sent "$out")" == 100 ]] || fail "$name: oneway sent != 100: $out"
  out=$("$client" --server 127.0.0.1:$port --size 64 --count 1) || fail "$name: probe: $out"
  expect_echo "$out" 1
  stop_server
  [[ "$(field received "$stop")" == 2301 ]] || fail "$name: received != 2301: $stop"
  [[ "$(field echoed "$stop")" == 2301 ]] || fail "$name: echoed != 2301: $stop"

  # --sink: counted, never echoed (the client, echo mode, hears nothing and
  # counts its datagrams lost after the loss timeout).
  start_server "$server" --port 0 --sink
  out=$("$client" --server 127.0.0.1:$port --size 64 --count 10 --window 10 \
    --loss-timeout-ms 100) || fail "$name --sink: client exited $?: $out"
  [[ "$(field received "$out")" == 0 && "$(field lost "$out")" == 10 ]] ||
    fail "$name --sink: echoes came back: $out"
  stop_server
  [[ "$stop" == "received=10 bytes=640 echoed=0 dropped=0" ]] || fail "$name --sink: $stop"

  status=0
  "$server" >/dev/null 2>&1 || status=$?
  [[ $status -eq 2 ]] || fail "$name without --port exited $status, not 2"
done

# A port nobody listens on: the kernel refuses, the client says so.
closed=$(find_bin floor_udp_echo_server)
start_server "$closed" --port 0
dead=$port
stop_server
status=0
"$client" --server 127.0.0.1:$dead --count 10 >/dev/null 2>&1 || status=$?
[[ $status -eq 1 ]] || fail "client against a closed port exited $status, not 1"
echo PASS
