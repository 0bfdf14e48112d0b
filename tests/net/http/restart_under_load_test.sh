#!/usr/bin/env bash
# A restart of http_server under wrk load refuses no connection and fails no
# request: on both backends, without and with I/O threads, SIGHUP in the
# middle of a 5 s wrk run starts a successor on the same listening sockets
# (LISTEN_FDS); once it serves, the old process drains and exits 0; wrk
# reports no socket error and no non-2xx answer; the successor answers
# afterwards, holds no fd it should not (no end of another process's pipe
# beyond stdout/stderr), and
# exits on SIGTERM. A successor that fails leaves the old process serving.
set -euo pipefail

source "$(dirname "$0")/../test_lib.sh"
server=$(runfile examples/http/http_server)
[[ -x /usr/bin/wrk ]] || fail "wrk is not installed (/usr/bin/wrk)"

# The next line of the servers' shared output, within $1 seconds, in $line.
next_line() {
  line=""
  read -t "$1" -r line <&"$server_out"
}

# Reads the servers' output until a line matches $1 (a regex), at most $2 s;
# BASH_REMATCH holds the match.
expect_line() {
  local deadline=$((SECONDS + $2))
  while ((SECONDS <= deadline)); do
    next_line 1 || continue
    echo "  server: $line"
    [[ "$line" =~ $1 ]] && return 0
  done
  fail "no line matching '$1' within $2 s"
}

# Waits (bounded) for pid $1, a child of ours, to exit; fails unless it
# exited 0.
expect_exit_zero() {
  local pid=$1 status=0
  (sleep 15 && kill -KILL "$pid" 2>/dev/null) &
  local watchdog=$!
  wait "$pid" || status=$?
  kill "$watchdog" 2>/dev/null || true
  wait "$watchdog" 2>/dev/null || true
  [[ $status -eq 0 ]] || fail "the server exited $status (137: still running after 15 s)"
}

run_case() {
  local backend=$1 threads=$2
  echo "== backend $backend, --threads $threads"
  coproc SERVER { exec "$server" --address 127.0.0.1 --port 0 --backend "$backend" \
    --threads "$threads" 2>&1; }
  local old_pid=$SERVER_PID
  exec {server_out}<&"${SERVER[0]}"
  expect_line 'listening on 127\.0\.0\.1:([0-9]+)$' 20
  local port=${BASH_REMATCH[1]}

  local report
  report=$(mktemp)
  wrk -t1 -c32 -d5s --latency "http://127.0.0.1:$port/hello" >"$report" 2>&1 &
  local wrk_pid=$!
  # A point in the middle of the load, not a wait for an event.
  sleep 1.5
  kill -HUP "$old_pid"
  expect_line 'successor ([0-9]+) is serving; stopping$' 15
  local new_pid=${BASH_REMATCH[1]}
  expect_exit_zero "$old_pid"
  wait "$wrk_pid" || fail "wrk exited $?: $(cat "$report")"
  echo "$report:" && sed 's/^/  wrk: /' "$report"
  grep -q 'requests in' "$report" || fail "wrk reported no requests"
  if grep -q 'Socket errors' "$report"; then fail "wrk: $(grep 'Socket errors' "$report")"; fi
  if grep -q 'Non-2xx' "$report"; then fail "wrk: $(grep 'Non-2xx' "$report")"; fi
  rm -f "$report"

  local body
  body=$(curl -sS --max-time 5 "http://127.0.0.1:$port/hello") || fail "curl after the restart"
  [[ "$body" == "hello world" ]] || fail "the successor answered '$body'"
  # Its fds: the listening sockets and its own; the readiness pipe is closed,
  # and nothing else of the old process's came along. A pipe of its own holds
  # both its ends (libunwind, under the CPU profiler, makes one at start to
  # probe addresses); a lone end is one shared with another process.
  local fd target
  local -A ends=()
  for fd in /proc/"$new_pid"/fd/*; do
    target=$(readlink "$fd" || true)
    case "${fd##*/}" in 0 | 1 | 2) continue ;; esac
    [[ "$target" == pipe:* ]] && ends[$target]=$((${ends[$target]:-0} + 1))
  done
  for target in "${!ends[@]}"; do
    ((ends[$target] == 2)) || fail "the successor holds one end of $target, another process's pipe"
  done

  # Not our child: its end is the end of the output it shares with the old.
  kill -TERM "$new_pid"
  local deadline=$((SECONDS + 10)) status=0
  while ((SECONDS <= deadline)); do
    next_line 1 && continue
    status=$?
    ((status <= 128)) && break
  done
  ((status > 0 && status <= 128)) || fail "the successor still runs 10 s after SIGTERM"
  exec {server_out}<&-
}

# A successor that cannot start (its --root is gone: a usage error, exit 2)
# is reported, and the old process goes on serving, then stops on SIGTERM
# with status 0.
failing_successor() {
  echo "== a successor that fails"
  local root
  root=$(mktemp -d)
  coproc SERVER { exec "$server" --address 127.0.0.1 --port 0 --root "$root" 2>&1; }
  local old_pid=$SERVER_PID
  exec {server_out}<&"${SERVER[0]}"
  expect_line 'listening on 127\.0\.0\.1:([0-9]+)$' 20
  local port=${BASH_REMATCH[1]}
  rmdir "$root"
  kill -HUP "$old_pid"
  expect_line 'successor [0-9]+ failed: (.*); still serving$' 15
  [[ "${BASH_REMATCH[1]}" == *"exited with status 2"* ]] ||
    fail "unexpected reason: ${BASH_REMATCH[1]}"
  local body
  body=$(curl -sS --max-time 5 "http://127.0.0.1:$port/hello") || fail "curl after the failure"
  [[ "$body" == "hello world" ]] || fail "the old server answered '$body'"
  kill -TERM "$old_pid"
  expect_exit_zero "$old_pid"
  exec {server_out}<&-
}

failing_successor
for backend in epoll uring; do
  for threads in 0 2; do
    run_case "$backend" "$threads"
  done
done
echo PASS
