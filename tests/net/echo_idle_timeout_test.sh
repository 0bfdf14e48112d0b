#!/usr/bin/env bash
# examples/echo's echo_server --idle-timeout: listed in --help, a bad value is
# refused (exit 2), and on each backend a client that goes quiet is
# disconnected after the timeout, with an INFO line naming the connection,
# while the server keeps serving. Every wait is bounded.
set -euo pipefail

readonly STARTUP_TIMEOUT=20  # seconds for the server to print its port
readonly IDLE_TIMEOUT=1      # seconds, the server's --idle-timeout
readonly EOF_TIMEOUT=10      # seconds for the client to see the disconnect
readonly EXIT_TIMEOUT=20     # seconds for the server to exit after SIGTERM (sanitizers are slow)

# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

SERVER=$(runfile examples/echo/echo_server)
readonly SERVER
WORK=${TEST_TMPDIR:-$(mktemp -d)}
readonly WORK

# ---- command line ----

"$SERVER" --help | grep -q -- "--idle-timeout SECONDS" || fail "--help does not list --idle-timeout"
status=0
"$SERVER" --idle-timeout -1 >/dev/null 2>"$WORK/bad.err" || status=$?
[[ $status -eq 2 ]] || fail "--idle-timeout -1 exited $status, wanted 2"
grep -q -- "--idle-timeout: invalid value" "$WORK/bad.err" || fail "no message for a bad --idle-timeout"

# ---- a quiet client is disconnected ----

# Runs a server on backend $1 with --idle-timeout, exchanges one line with it
# from a client that then stays quiet, and checks the disconnect.
check_backend() {
  local backend=$1
  local fifo="$WORK/server.$backend.fifo"
  local err="$WORK/server.$backend.err"
  rm -f "$fifo"
  mkfifo "$fifo"
  # --foreground: our SIGTERM goes to the server alone. Without it timeout
  # also sends SIGTERM and SIGCONT to its process group, and a SIGCONT that
  # lands while LeakSanitizer stops the exiting server to scan it cancels
  # the ptrace stop LeakSanitizer waits for: the ASan run hangs.
  LIBNET_LOG_LEVEL=INFO LIBNET_POLLER=$backend timeout --foreground -k "$EXIT_TIMEOUT" 120 \
    "$SERVER" --address 127.0.0.1 --port 0 --idle-timeout "$IDLE_TIMEOUT" >"$fifo" 2>"$err" &
  local server=$!
  exec 3<"$fifo"
  local line=""
  if ! read -r -t "$STARTUP_TIMEOUT" line <&3; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    cat "$err" >&2
    fail "$backend: echo_server printed no 'listening' line within ${STARTUP_TIMEOUT}s"
  fi
  local port=${line##*:}
  [[ "$port" =~ ^[0-9]+$ ]] || fail "$backend: unexpected first line '$line'"

  exec 4<>"/dev/tcp/127.0.0.1/$port"
  local start
  start=$(date +%s%N)
  echo "hello" >&4
  local reply=""
  read -r -t 5 reply <&4 || fail "$backend: no echo"
  [[ "$reply" == "hello" ]] || fail "$backend: echo was '$reply'"
  # Quiet from here: the next read ends with EOF (status 1, nothing read)
  # once the server disconnects; a timeout (status > 128) is a failure.
  local rc=0
  read -r -t "$EOF_TIMEOUT" reply <&4 || rc=$?
  local elapsedMs=$((($(date +%s%N) - start) / 1000000))
  exec 4<&-
  [[ $rc -eq 1 ]] || fail "$backend: not disconnected within ${EOF_TIMEOUT}s (read status $rc)"
  # Measured from before the last byte sent: never less than the timeout.
  ((elapsedMs >= IDLE_TIMEOUT * 1000)) || fail "$backend: disconnected after only ${elapsedMs} ms"

  # Still serving after the kick.
  exec 4<>"/dev/tcp/127.0.0.1/$port"
  echo "again" >&4
  read -r -t 5 reply <&4 || fail "$backend: no echo on a new connection"
  [[ "$reply" == "again" ]] || fail "$backend: echo was '$reply'"
  exec 4<&-

  kill -TERM "$server"
  # A server that has not exited by then is stuck: show where before the
  # timeout's SIGKILL ends it.
  local waited=0
  while pgrep -P "$server" >/dev/null && ((waited < EXIT_TIMEOUT * 10 - 10)); do
    sleep 0.1
    waited=$((waited + 1))
  done
  if child=$(pgrep -P "$server"); then
    echo "echo_server (pid $child) still running $((waited / 10)) s after SIGTERM:" >&2
    gdb -p "$child" -batch -ex "thread apply all bt" 2>&1 | grep -E "^(#|Thread)" >&2 || true
  fi
  status=0
  wait "$server" || status=$?
  exec 3<&-
  if [[ $status -ne 0 ]]; then
    cat "$err" >&2
    fail "$backend: echo_server exited $status after SIGTERM"
  fi
  grep -q "connection echo#1 from 127.0.0.1:[0-9]* idle too long, disconnecting" "$err" || {
    cat "$err" >&2
    fail "$backend: no INFO line naming the idle connection"
  }
  echo "ok: $backend, disconnected after ${elapsedMs} ms"
}

# Without io_uring the uring run falls back to epoll, and still must pass.
check_backend epoll
check_backend uring
