#!/usr/bin/env bash
# examples/echo's echo_server and coro_echo_server with --unix, on each
# backend: they serve on a path (echo_client --unix checks the echoes) and
# on an abstract name (no file made); a stale socket file at the path is
# replaced; SIGTERM stops them with exit 0 and their socket file removed. A
# second server on a live server's path, and a server on a path that is not
# a socket, exit 1 naming the path and leave the file alone; a path over
# sun_path's limit is a usage error (exit 2). Every wait is bounded.
set -euo pipefail

readonly STARTUP_TIMEOUT=20  # seconds for a server to print its address
readonly EXIT_TIMEOUT=20     # seconds for a server to exit after SIGTERM (sanitizers are slow)

# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

ECHO_SERVER=$(runfile examples/echo/echo_server)
CORO_SERVER=$(runfile examples/echo/coro_echo_server)
CLIENT=$(runfile examples/echo/echo_client)
readonly ECHO_SERVER CORO_SERVER CLIENT
# Not TEST_TMPDIR: its paths can be longer than sun_path holds.
WORK=$(mktemp -d /tmp/libnet-echo-unix-XXXXXX)
readonly WORK
trap 'rm -rf "$WORK"' EXIT

SERVER_PID=""

# start_server NAME BINARY BACKEND UNIX: runs it in the background and waits
# for its "listening on unix:..." line.
start_server() {
  local name=$1 binary=$2 backend=$3 where=$4
  local fifo="$WORK/$name.fifo"
  rm -f "$fifo"
  mkfifo "$fifo"
  # --foreground: our SIGTERM goes to the server alone. Without it timeout
  # also sends SIGTERM and SIGCONT to its process group, and a SIGCONT that
  # lands while LeakSanitizer stops the exiting server to scan it cancels
  # the ptrace stop LeakSanitizer waits for: the ASan run hangs.
  LIBNET_POLLER=$backend timeout --foreground -k "$EXIT_TIMEOUT" 120 "$binary" --unix "$where" \
    >"$fifo" 2>"$WORK/$name.err" &
  SERVER_PID=$!
  exec 3<"$fifo"
  local line=""
  if ! read -r -t "$STARTUP_TIMEOUT" line <&3; then
    kill "$SERVER_PID" 2>/dev/null || true
    cat "$WORK/$name.err" >&2
    fail "$name: no 'listening' line within ${STARTUP_TIMEOUT}s"
  fi
  exec 3<&-
  [[ "$line" == *" listening on unix:$where" ]] || fail "$name: first line '$line'"
}

# stop_server NAME: SIGTERM, then exit status 0 within EXIT_TIMEOUT.
stop_server() {
  local name=$1
  kill -TERM "$SERVER_PID"
  local status=0
  wait "$SERVER_PID" || status=$?
  [[ $status -eq 0 ]] || { cat "$WORK/$name.err" >&2; fail "$name: exit status $status after SIGTERM"; }
}

# echo_through NAME UNIX: five connections, three round trips each.
echo_through() {
  local name=$1 where=$2
  "$CLIENT" --unix "$where" --connections 5 --count 3 --message "over unix" >"$WORK/$name.client" \
    2>&1 || { cat "$WORK/$name.client" >&2; fail "$name: echo_client --unix $where failed"; }
  [[ $(grep -c "^echoed 3 x 9 bytes OK$" "$WORK/$name.client") -eq 5 ]] ||
    fail "$name: echo_client did not verify 5 connections: $(cat "$WORK/$name.client")"
}

# A socket file with nobody listening on it: what a crashed server leaves.
make_stale_socket() {
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$1"
  [[ -S "$1" ]] || fail "could not make a stale socket at $1"
}

# python_echo NAME UNIX: an independent client (Python's socket module) sends
# 1 MiB in pieces, reading as it goes, and compares the echo byte for byte.
python_echo() {
  timeout -k 5 60 python3 - "$2" <<'PY' || fail "$1: the Python client failed"
import os, socket, sys
where = sys.argv[1]
address = "\0" + where[1:] if where.startswith("@") else where
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(address)
data = os.urandom(1 << 20)
got = bytearray()
for i in range(0, len(data), 65536):
    s.sendall(data[i:i + 65536])
    while len(got) < i + 65536:
        chunk = s.recv(1 << 20)
        if not chunk:
            sys.exit("closed after %d bytes" % len(got))
        got += chunk
if bytes(got) != data:
    sys.exit("the echo differs")
PY
}

check() {
  local label=$1 binary=$2 backend=$3
  local name="$label.$backend"
  local path="$WORK/$name.sock"

  make_stale_socket "$path"
  start_server "$name" "$binary" "$backend" "$path"
  [[ -S "$path" ]] || fail "$name: no socket at $path"
  echo_through "$name" "$path"

  # A second server on the live path: refused, the first left serving.
  local status=0
  "$binary" --unix "$path" >/dev/null 2>"$WORK/$name.second.err" || status=$?
  [[ $status -eq 1 ]] || fail "$name: a second server on a live path exited $status, wanted 1"
  grep -q "unix:$path: a server is listening there" "$WORK/$name.second.err" ||
    fail "$name: second server's message: $(cat "$WORK/$name.second.err")"
  echo_through "$name" "$path"

  stop_server "$name"
  [[ ! -e "$path" ]] || fail "$name: $path left behind after SIGTERM"

  local abstract="@libnet-echo-unix-$$-$name"
  start_server "$name.abstract" "$binary" "$backend" "$abstract"
  echo_through "$name.abstract" "$abstract"
  python_echo "$name.abstract" "$abstract"
  stop_server "$name.abstract"
  echo "ok: $name"
}

for backend in epoll uring; do
  check echo_server "$ECHO_SERVER" "$backend"
  check coro_echo_server "$CORO_SERVER" "$backend"
done
# The abstract servers made no file.
[[ -z $(find "$WORK" -name '*abstract*' -type s) ]] || fail "an abstract name made a file"

# A path that is not a socket is never removed.
echo "keep me" >"$WORK/precious"
status=0
"$ECHO_SERVER" --unix "$WORK/precious" >/dev/null 2>"$WORK/precious.err" || status=$?
[[ $status -eq 1 ]] || fail "a regular file's path: exit $status, wanted 1"
grep -q "the path exists and is not a socket" "$WORK/precious.err" ||
  fail "a regular file's path: $(cat "$WORK/precious.err")"
[[ $(cat "$WORK/precious") == "keep me" ]] || fail "the regular file was changed"

# Over sun_path's limit: a usage error that says the limit.
status=0
"$ECHO_SERVER" --unix "/tmp/$(printf 'a%.0s' {1..200})" >/dev/null 2>"$WORK/long.err" || status=$?
[[ $status -eq 2 ]] || fail "a 205-byte path: exit $status, wanted 2"
grep -q "the limit is 107" "$WORK/long.err" || fail "a 205-byte path: $(cat "$WORK/long.err")"

# A Unix socket and a TCP address at once: a usage error, not one of them
# chosen silently.
for program in "$ECHO_SERVER" "$CORO_SERVER" "$CLIENT"; do
  status=0
  "$program" --unix "@never-used" --port 7 >/dev/null 2>"$WORK/both.err" || status=$?
  [[ $status -eq 2 ]] || fail "$program --unix with --port: exit $status, wanted 2"
  grep -q -- "--unix and --port cannot be given together" "$WORK/both.err" ||
    fail "$program --unix with --port: $(cat "$WORK/both.err")"
done
echo "ok: refusals"
