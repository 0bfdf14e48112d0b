#!/usr/bin/env bash
# --cpu-affinity LIST of the example servers with I/O threads (echo_server,
# http_server, coro_echo_server, coro_http_server, ws_echo_server): listed in --help; a
# malformed list, a CPU that does not exist, one outside the process's
# allowed set (taskset) and more CPUs than loops are refused with exit 2 and
# a message naming the option; on each backend the threads run where the
# rule puts them (main loop on the first CPU when LIST has one CPU more than
# --threads, I/O loop i on the next), read from /proc, and the server
# serves. Works on one CPU; the cases that need two say so and are skipped.
set -euo pipefail

readonly STARTUP_TIMEOUT=20  # seconds for the server to print its port
readonly EXIT_TIMEOUT=20     # seconds for the server to exit after SIGTERM (sanitizers are slow)

# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

ECHO=$(runfile examples/echo/echo_server)
HTTP=$(runfile examples/http/http_server)
CORO_ECHO=$(runfile examples/echo/coro_echo_server)
CORO_HTTP=$(runfile examples/http/coro_http_server)
WS_ECHO=$(runfile examples/websocket/ws_echo_server)
readonly ECHO HTTP CORO_ECHO CORO_HTTP WS_ECHO
WORK=${TEST_TMPDIR:-$(mktemp -d)}
readonly WORK

# The CPUs this process may use, sorted, one per line.
mapfile -t ALLOWED < <(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
readonly FIRST=${ALLOWED[0]}
readonly LAST=${ALLOWED[${#ALLOWED[@]} - 1]}
readonly MISSING=$(getconf _NPROCESSORS_CONF)

# ---- command line ----

# Runs "$@", which must exit 2 with a message on stderr containing $1 (the
# first argument is the expected text, the rest the command).
expect_usage_error() {
  local want=$1
  shift
  local status=0
  "$@" >/dev/null 2>"$WORK/err" || status=$?
  [[ $status -eq 2 ]] || fail "$* exited $status, wanted 2"
  grep -qF -- "$want" "$WORK/err" || fail "$*: no '$want' in: $(cat "$WORK/err")"
}

for server in "$ECHO" "$HTTP" "$CORO_ECHO" "$CORO_HTTP" "$WS_ECHO"; do
  "$server" --help >"$WORK/help"
  grep -q -- "--cpu-affinity LIST" "$WORK/help" || fail "$server --help lists no --cpu-affinity"
  expect_usage_error '--cpu-affinity: CPU list "x": "x" is not a CPU number' \
    "$server" --cpu-affinity x
  expect_usage_error '--cpu-affinity: CPU list "3-1": range "3-1" ends below its start' \
    "$server" --cpu-affinity 3-1
  expect_usage_error "--cpu-affinity: CPU list \"$FIRST-$MISSING\": CPU $MISSING does not exist" \
    "$server" --cpu-affinity "$FIRST-$MISSING"
  expect_usage_error "--cpu-affinity: 3 CPUs for 2 loop(s) (--threads 1 and the main loop)" \
    "$server" --threads 1 --cpu-affinity "$FIRST,$FIRST,$FIRST"
  if ((${#ALLOWED[@]} >= 2)); then
    expect_usage_error "--cpu-affinity: CPU list \"$LAST\": CPU $LAST is not in this process's allowed set ($FIRST)" \
      taskset -c "$FIRST" "$server" --cpu-affinity "$LAST"
  else
    echo "skipped: a CPU outside the allowed set needs 2 CPUs, this process may use 1"
  fi
done
expect_usage_error "--hand-over: invalid value 'fewest'" "$HTTP" --hand-over fewest
expect_usage_error "--hand-over: only with --accept hand-over" "$HTTP" --threads 1 \
  --hand-over least-connections

# ---- where the threads run ----

# Starts "$@" (a server printing "... listening on IP:PORT") under timeout,
# with stdout to $WORK/out; sets PID (timeout's), SERVER (the server's) and
# PORT.
start_server() {
  local fifo="$WORK/server.fifo"
  rm -f "$fifo"
  mkfifo "$fifo"
  timeout --foreground -k "$EXIT_TIMEOUT" 120 "$@" >"$fifo" 2>"$WORK/server.err" &
  PID=$!
  exec 3<"$fifo"
  local line=""
  PORT=""
  while read -r -t "$STARTUP_TIMEOUT" line <&3; do
    echo "$line" >>"$WORK/out"
    if [[ "$line" == *" listening on "* ]]; then
      PORT=${line##*:}
      break
    fi
  done
  [[ "$PORT" =~ ^[0-9]+$ ]] || {
    cat "$WORK/server.err" >&2
    fail "$*: no 'listening' line within ${STARTUP_TIMEOUT}s"
  }
  SERVER=$(cat "/proc/$PID/task/$PID/children")
  SERVER=${SERVER%% *}
}

stop_server() {
  kill -TERM "$PID"
  local status=0
  wait "$PID" || status=$?
  exec 3<&-
  [[ $status -eq 0 ]] || fail "server exited $status after SIGTERM"
}

# The CPU list the thread named $1 (comm) of the server may run on.
thread_cpus() {
  local task
  for task in /proc/"$SERVER"/task/*; do
    if [[ "$(cat "$task/comm")" == "$1" ]]; then
      sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$task/status"
      return 0
    fi
  done
  fail "no thread named $1 in server $SERVER"
}

check_backend() {
  local backend=$1
  # Three CPUs for two I/O threads: the main loop on the last, loop 0 on the
  # first, loop 1 on the last (one CPU: all on it).
  : >"$WORK/out"
  LIBNET_POLLER=$backend start_server "$ECHO" --address 127.0.0.1 --port 0 --threads 2 \
    --cpu-affinity "$LAST,$FIRST,$LAST"
  [[ "$(thread_cpus echo_server)" == "$LAST" ]] || fail "$backend: main loop on $(thread_cpus echo_server)"
  [[ "$(thread_cpus echo0)" == "$FIRST" ]] || fail "$backend: echo0 on $(thread_cpus echo0)"
  [[ "$(thread_cpus echo1)" == "$LAST" ]] || fail "$backend: echo1 on $(thread_cpus echo1)"
  grep -qF "cpu affinity: main loop on CPU $LAST" "$WORK/out" || fail "$backend: no affinity line"
  exec 4<>"/dev/tcp/127.0.0.1/$PORT"
  echo "pinned" >&4
  local reply=""
  read -r -t 5 reply <&4 || fail "$backend: no echo"
  [[ "$reply" == "pinned" ]] || fail "$backend: echo was '$reply'"
  exec 4<&-
  stop_server

  # As many CPUs as I/O threads: the main loop is left alone, and the
  # accepting loop hands over to the least loaded.
  : >"$WORK/out"
  LIBNET_POLLER=$backend start_server "$HTTP" --address 127.0.0.1 --port 0 --threads 1 \
    --accept hand-over --hand-over least-connections --cpu-affinity "$LAST"
  [[ "$(thread_cpus http0)" == "$LAST" ]] || fail "$backend: http0 on $(thread_cpus http0)"
  local mainCpus
  mainCpus=$(thread_cpus http_server)
  [[ "$mainCpus" == "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$$/status)" ]] ||
    fail "$backend: main loop on $mainCpus"
  exec 4<>"/dev/tcp/127.0.0.1/$PORT"
  printf 'GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&4
  grep -q "hello world" <(timeout 5 cat <&4) || fail "$backend: no answer from http_server"
  exec 4<&-
  stop_server
}

# The other servers: one I/O thread and two CPUs, the main loop on the last
# and I/O loop 0 (the thread named $3) on the first; they serve a request.
check_pinned() {
  local backend=$1 server=$2 ioThread=$3
  : >"$WORK/out"
  LIBNET_POLLER=$backend start_server "$server" --address 127.0.0.1 --port 0 --threads 1 \
    --cpu-affinity "$LAST,$FIRST"
  local mainCpus
  mainCpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$SERVER/task/$SERVER/status")
  [[ "$mainCpus" == "$LAST" ]] || fail "$backend $server: main loop on $mainCpus"
  [[ "$(thread_cpus "$ioThread")" == "$FIRST" ]] ||
    fail "$backend $server: $ioThread on $(thread_cpus "$ioThread")"
  grep -qF "cpu affinity: main loop on CPU $LAST" "$WORK/out" || fail "$backend $server: no affinity line"
  exec 4<>"/dev/tcp/127.0.0.1/$PORT"
  printf 'GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&4
  # The first line back: the answer's status line, or (the echo server) the
  # request's own.
  local reply=""
  read -r -t 5 reply <&4 || fail "$backend $server: no answer"
  [[ "$reply" == *"HTTP/1.1"* ]] || fail "$backend $server: answered '$reply'"
  exec 4<&-
  stop_server
}

for backend in epoll uring; do
  check_backend "$backend"
  check_pinned "$backend" "$CORO_ECHO" coro-echo0
  check_pinned "$backend" "$CORO_HTTP" coro-http0
  check_pinned "$backend" "$WS_ECHO" ws-echo0
done
echo "PASS"
