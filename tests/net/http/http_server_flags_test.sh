#!/usr/bin/env bash
# examples/http's http_server refuses a header timeout of 0 with a clear
# message and exit status 2 (there is no "off"), and its --help says so; an
# unknown --accept mode and an out-of-range --defer-accept are refused the
# same way, and so is a bad --max-upload. With --loop-stats 1 it says at exit how many connections each
# loop took: --accept hand-over spreads four over two loops two and two.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

server=""
for path in "${TEST_SRCDIR:-}/libnet/examples/http/http_server" \
            "${RUNFILES_DIR:-}/libnet/examples/http/http_server"; do
  [[ -x "$path" ]] && server=$path && break
done
[[ -n "$server" ]] || fail "examples/http/http_server not found in the runfiles"

# Read whole first: grep -q stops at its match, and the server writing the
# rest of its help into a closed pipe would fail the pipeline.
help=$("$server" --help)
grep -q "cannot be turned" <<<"$help" || fail "--help does not say the header timeout stays on"
for value in 0 -5 86401 ten; do
  status=0
  err=$("$server" --port 0 --header-timeout "$value" 2>&1 >/dev/null) || status=$?
  [[ $status -eq 2 ]] || fail "--header-timeout $value exited $status, want 2"
  [[ "$err" == *"--header-timeout"*"1..86400"* ]] || fail "--header-timeout $value: unclear message '$err'"
done
for value in "" sideways per_loop hand-over-ring; do
  status=0
  err=$("$server" --port 0 --accept "$value" 2>&1 >/dev/null) || status=$?
  [[ $status -eq 2 ]] || fail "--accept '$value' exited $status, want 2"
  [[ "$err" == *"--accept"*"per-loop or hand-over or hand-over-queue"* ]] || fail "--accept '$value': unclear message '$err'"
done
for value in -1 3601 soon; do
  status=0
  err=$("$server" --port 0 --defer-accept "$value" 2>&1 >/dev/null) || status=$?
  [[ $status -eq 2 ]] || fail "--defer-accept $value exited $status, want 2"
  [[ "$err" == *"--defer-accept"* ]] || fail "--defer-accept $value: unclear message '$err'"
done
for value in -1 1k "" 1.5; do
  status=0
  err=$("$server" --port 0 --max-upload "$value" 2>&1 >/dev/null) || status=$?
  [[ $status -eq 2 ]] || fail "--max-upload '$value' exited $status, want 2"
  [[ "$err" == *"--max-upload"* ]] || fail "--max-upload '$value': unclear message '$err'"
done
status=0
"$server" --port 0 --loop-stats 2 >/dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "--loop-stats 2 exited $status, want 2"

out=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; rm -f "$out"' EXIT
"$server" --address 127.0.0.1 --port 0 --threads 2 --accept hand-over --loop-stats 1 >"$out" 2>&1 &
pid=$!
port=""
for _ in $(seq 200); do  # bounded: 10 s
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
  [[ -n "$port" ]] && break
  sleep 0.05
done
[[ -n "$port" ]] || fail "http_server did not start: $(cat "$out")"
for _ in 1 2 3 4; do
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'GET /hello HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n' >&3
  response=$(timeout 5 cat <&3) || fail "no response from http_server"
  exec 3<&-
  [[ "$response" == *"hello world"* ]] || fail "unexpected response '$response'"
done
kill -TERM "$pid"
timeout 10 tail --pid="$pid" -f /dev/null || fail "http_server did not stop on SIGTERM"
wait "$pid" || fail "http_server exited with status $?"
for loop in 0 1; do
  grep -q "http_server loop $loop: 2 connections" "$out" ||
    fail "loop $loop did not take 2 of 4 connections: $(cat "$out")"
done
echo PASS
