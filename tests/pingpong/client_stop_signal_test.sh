#!/usr/bin/env bash
# SIGINT and SIGTERM end a run of each threaded ping-pong client (libnet on
# both backends, asio) early and cleanly: exit status 0 within a bounded time,
# never death by the signal (130/143). Once per signal while the clock runs
# (a RESULT line follows), and once with SIGTERM sent while it is stuck
# connecting to a listener that never accepts and whose backlog is full (no
# RESULT then, but the status stays 0). Background jobs of a script start
# with SIGINT ignored; the clients take it all the same (a blocked signal is
# queued whatever its disposition, and asio installs a handler). Loopback; the
# server is pingpong_server on port 0; every wait is bounded.
set -euo pipefail

bin() { echo "${TEST_SRCDIR}/libnet/$1"; }
SERVER=$(bin pingpong/pingpong_server)
PP_CLIENT=$(bin pingpong/pingpong_client)
ASIO_CLIENT=$(bin pingpong/asio/asio_pingpong_client)
TMP=$(mktemp -d "${TEST_TMPDIR:-/tmp}/client-stop.XXXXXX")
readonly RUN_SECONDS=120  # far longer than the test: only a signal ends it
readonly EXIT_TIMEOUT=20

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

server_pid=""
stuck_pid=""
stop_servers() {
  local pid
  for pid in $server_pid $stuck_pid; do
    kill -TERM "$pid" 2>/dev/null || true
    timeout 10 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap stop_servers EXIT

# Created here, not by the background job's redirection: the polls below
# may run before the job has opened them (sed on a missing file fails, and
# set -e would end the test).
: >"$TMP/server.out"
: >"$TMP/stuck.out"
"$SERVER" 127.0.0.1 0 2 >>"$TMP/server.out" 2>"$TMP/server.err" &
server_pid=$!
port=""
for _ in $(seq 400); do
  port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\).*/\1/p' "$TMP/server.out" | head -1)
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.05
done
if [[ -z "$port" ]]; then
  echo "FAIL: pingpong_server did not start: $(cat "$TMP/server.err")" >&2
  exit 1
fi

# Listens with a backlog of 1 and never accepts: once the queue is full the
# kernel drops further SYNs, so a connect to it stays pending.
command -v python3 >/dev/null || { echo "FAIL: python3 is needed" >&2; exit 1; }
python3 -c '
import signal, socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
signal.pause()  # until the SIGTERM of stop_servers
' >>"$TMP/stuck.out" &
stuck_pid=$!
stuck_port=""
for _ in $(seq 400); do
  stuck_port=$(sed -n '1s/^\([0-9][0-9]*\)$/\1/p' "$TMP/stuck.out")
  [[ -n "$stuck_port" ]] && break
  kill -0 "$stuck_pid" 2>/dev/null || break
  sleep 0.05
done
[[ -n "$stuck_port" ]] || { echo "FAIL: the non-accepting listener did not start" >&2; exit 1; }

# True while a connect to 127.0.0.1:$1 is pending (a socket in SYN_SENT):
# only the client under test connects to the stuck listener, so it is
# inside its connect phase, its signal handling already set up.
connect_pending_to() {
  local hex
  hex=$(printf '%04X' "$1")
  awk -v remote="^0100007F:$hex\$" '$3 ~ remote && $4 == "02" { found = 1 } END { exit !found }' \
    /proc/net/tcp
}

# run_case NAME SIGNAL WHEN CLIENT_CMD...: WHEN is "started" (after the
# client prints START) or "connecting" (while one of its connects to the
# stuck listener is pending).
run_case() {
  local name=$1 signal=$2 when=$3
  shift 3
  local out="$TMP/$name.out" err="$TMP/$name.err"
  "$@" >"$out" 2>"$err" &
  local pid=$!
  local seen=0
  for _ in $(seq 400); do
    if [[ $when == started ]]; then
      grep -q '^START$' "$out" && seen=1 && break
    else
      connect_pending_to "$stuck_port" && seen=1 && break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if ((!seen)); then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    fail "$name: not $when within 20 s: $(cat "$err")"
    return
  fi
  kill "-$signal" "$pid"
  local status=0
  if ! timeout "$EXIT_TIMEOUT" tail --pid="$pid" -f /dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    fail "$name: still running ${EXIT_TIMEOUT} s after SIG$signal"
    return
  fi
  wait "$pid" || status=$?
  if ((status != 0)); then
    fail "$name: exit status $status after SIG$signal, want 0: $(cat "$err")"
    return
  fi
  if [[ $when == started ]] && ! grep -q '^RESULT' "$out"; then
    fail "$name: no RESULT line after SIG$signal: $(cat "$out" "$err")"
    return
  fi
  echo "ok: $name exits 0 on SIG$signal ($when)"
}

sessions=50
for backend in epoll uring; do
  for signal in INT TERM; do
    run_case "libnet-$backend-$signal" "$signal" started \
      "$PP_CLIENT" --backend "$backend" 127.0.0.1 "$port" 2 64 "$sessions" "$RUN_SECONDS"
  done
  run_case "libnet-$backend-connecting" TERM connecting \
    "$PP_CLIENT" --backend "$backend" 127.0.0.1 "$stuck_port" 2 64 "$sessions" "$RUN_SECONDS"
done
for signal in INT TERM; do
  run_case "asio-$signal" "$signal" started \
    "$ASIO_CLIENT" 127.0.0.1 "$port" 2 64 "$sessions" "$RUN_SECONDS"
done
run_case "asio-connecting" TERM connecting \
  "$ASIO_CLIENT" 127.0.0.1 "$stuck_port" 2 64 "$sessions" "$RUN_SECONDS"

if ((failures > 0)); then
  echo "$failures case(s) failed" >&2
  exit 1
fi
echo PASS
