#!/usr/bin/env bash
# examples/udp's udp_echo_server and udp_echo_client against each other, on
# each backend: 1,000,000 datagrams of mixed sizes (1 to 65,507 bytes)
# echoed and verified byte for byte, with a window that keeps loopback
# lossless (--verify fails the run on any loss); the counts are printed for
# the record. An echo that comes after the client's --timeout-ms is late,
# not lost (udp_echo_client waits for stragglers while echoes keep coming),
# so a machine slowed by other work cannot fail the run. Then IPv6, a --threads server (SO_REUSEPORT sockets on loop
# threads), and --sink: the counts the server prints on SIGTERM must match
# what the client sent.
set -euo pipefail

# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"

SERVER=$(runfile examples/udp/udp_echo_server)
CLIENT=$(runfile examples/udp/udp_echo_client)
readonly SERVER CLIENT
WORK=${TEST_TMPDIR:-$(mktemp -d)}
readonly WORK
# A million in the plain and ASan runs; under ThreadSanitizer, which makes
# every datagram several times dearer, a fifth of that (the race checks need
# the paths, not the volume).
if [[ -n "${TSAN_OPTIONS:-}" ]]; then
  readonly COUNT=${UDP_ECHO_TEST_COUNT:-200000}
else
  readonly COUNT=${UDP_ECHO_TEST_COUNT:-1000000}
fi

server_pid=""
cleanup() { [[ -z "$server_pid" ]] || kill -9 "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT

# start_server NAME ARGS...: starts it, sets $port (bounded wait).
start_server() {
  local name=$1
  shift
  : >"$WORK/$name.server.out"
  "$SERVER" --port 0 "$@" >"$WORK/$name.server.out" 2>"$WORK/$name.server.err" &
  server_pid=$!
  port=""
  for _ in $(seq 1 500); do
    port=$(sed -n 's/^udp_echo_server listening on .*:\([0-9][0-9]*\)$/\1/p' "$WORK/$name.server.out")
    [[ -n "$port" ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || fail "$name: server exited: $(cat "$WORK/$name.server.err")"
    sleep 0.02
  done
  fail "$name: server did not print its port"
}

# stop_server NAME: SIGTERM, bounded wait; leaves its summary in $summary.
stop_server() {
  local name=$1
  kill -TERM "$server_pid"
  local status=0
  timeout 10 tail --pid="$server_pid" -f /dev/null || fail "$name: server still running 10 s after SIGTERM"
  wait "$server_pid" || status=$?
  server_pid=""
  [[ $status -eq 0 ]] || fail "$name: server exit status $status: $(cat "$WORK/$name.server.err")"
  summary=$(grep '^received=' "$WORK/$name.server.out") || fail "$name: no summary from the server"
}

# field NAME LINE: the value of NAME=... in LINE.
field() { sed -n "s/.*\\b$1=\\([0-9.]*\\).*/\\1/p" <<<"$2"; }

# run_client NAME ARGS...: runs it (bounded); its line in $line.
run_client() {
  local name=$1
  shift
  local status=0
  timeout -k 5 300 "$CLIENT" "$@" >"$WORK/$name.client.out" 2>"$WORK/$name.client.err" || status=$?
  line=$(cat "$WORK/$name.client.out")
  echo "$name: $line"
  [[ $status -eq 0 ]] || fail "$name: client exit status $status: $line $(cat "$WORK/$name.client.err")"
}

for backend in epoll uring; do
  name="mixed.$backend"
  start_server "$name" --backend "$backend"
  run_client "$name" --server "127.0.0.1:$port" --backend "$backend" --flows 8 --window 8 \
    --sizes mixed --count "$COUNT" --verify
  [[ $(field sent "$line") -eq $COUNT && $(field received "$line") -eq $COUNT ]] ||
    fail "$name: not all $COUNT datagrams came back: $line"
  [[ $(field lost "$line") -eq 0 && $(field corrupt "$line") -eq 0 && $(field truncated "$line") -eq 0 ]] ||
    fail "$name: $line"
  stop_server "$name"
  echo "$name: server $summary"
  [[ $(field received "$summary") -eq $COUNT && $(field echoed "$summary") -eq $COUNT ]] ||
    fail "$name: server counts: $summary"

  # A server that stalls (stopped for longer than the client's timeout, as
  # a loaded machine can stall it): every echo is late, none lost.
  name="stall.$backend"
  start_server "$name" --backend "$backend"
  kill -STOP "$server_pid"
  timeout -k 5 120 "$CLIENT" --server "127.0.0.1:$port" --backend "$backend" --flows 2 \
    --window 4 --size 64 --count 2000 --timeout-ms 100 --verify \
    >"$WORK/$name.client.out" 2>"$WORK/$name.client.err" &
  client_pid=$!
  sleep 0.5  # the stall itself
  kill -CONT "$server_pid"
  status=0
  wait "$client_pid" || status=$?
  line=$(cat "$WORK/$name.client.out")
  echo "$name: $line"
  [[ $status -eq 0 && $(field received "$line") -eq 2000 && $(field lost "$line") -eq 0 ]] ||
    fail "$name: client exit status $status: $line $(cat "$WORK/$name.client.err")"
  [[ $(field late "$line") -gt 0 ]] || fail "$name: no echo was late: $line"
  stop_server "$name"

  name="ipv6.$backend"
  start_server "$name" --backend "$backend" --address ::1
  run_client "$name" --server "[::1]:$port" --backend "$backend" --flows 2 --sizes mixed \
    --count 20000 --verify
  stop_server "$name"

  name="threads.$backend"
  start_server "$name" --backend "$backend" --threads 3
  run_client "$name" --server "127.0.0.1:$port" --backend "$backend" --flows 12 --size 1200 \
    --count 60000 --verify
  stop_server "$name"
  [[ $(field received "$summary") -eq 60000 ]] || fail "$name: server counts: $summary"

  name="sink.$backend"
  start_server "$name" --backend "$backend" --sink
  run_client "$name" --server "127.0.0.1:$port" --backend "$backend" --mode oneway --size 64 \
    --count 20000 --window 4
  sent=$(field sent "$line")
  [[ $sent -eq 20000 ]] || fail "$name: $line"
  stop_server "$name"
  # Loopback may drop one-way datagrams when the server is slower than the
  # client; what it counts is what arrived, never more, and it echoed none.
  [[ $(field received "$summary") -le $sent && $(field received "$summary") -gt 0 &&
     $(field echoed "$summary") -eq 0 ]] || fail "$name: server counts: $summary"
  echo "$name: server $summary"

  # An independent peer: Python's socket module, IPv4 and IPv6, sizes up to
  # the largest datagram, each echo compared byte for byte.
  for family in 4 6; do
    name="python$family.$backend"
    addr=127.0.0.1
    [[ $family == 6 ]] && addr=::1
    start_server "$name" --backend "$backend" --address "$addr"
    timeout -k 5 60 python3 - "$addr" "$port" <<'PY' || fail "$name: the Python client failed"
import os, socket, sys
addr, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
for size in (1, 64, 1200, 9000, 65507):
    for _ in range(20):
        data = os.urandom(size)
        s.sendto(data, (addr, port))
        echo, peer = s.recvfrom(65536)
        if echo != data or peer[1] != port:
            sys.exit("size %d: echo differs or comes from %r" % (size, peer))
PY
    stop_server "$name"
    [[ $(field received "$summary") -eq 100 ]] || fail "$name: server counts: $summary"
  done
done
echo PASS
