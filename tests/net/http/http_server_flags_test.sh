#!/usr/bin/env bash
# examples/http's http_server refuses a header timeout of 0 with a clear
# message and exit status 2 (there is no "off"), and its --help says so; an
# unknown --accept mode and an out-of-range --defer-accept are refused the
# same way.
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

"$server" --help | grep -q "cannot be turned" || fail "--help does not say the header timeout stays on"
for value in 0 -5 86401 ten; do
  status=0
  err=$("$server" --port 0 --header-timeout "$value" 2>&1 >/dev/null) || status=$?
  [[ $status -eq 2 ]] || fail "--header-timeout $value exited $status, want 2"
  [[ "$err" == *"--header-timeout"*"1..86400"* ]] || fail "--header-timeout $value: unclear message '$err'"
done
for value in "" sideways per_loop; do
  status=0
  err=$("$server" --port 0 --accept "$value" 2>&1 >/dev/null) || status=$?
  [[ $status -eq 2 ]] || fail "--accept '$value' exited $status, want 2"
  [[ "$err" == *"--accept"*"per-loop or hand-over"* ]] || fail "--accept '$value': unclear message '$err'"
done
for value in -1 3601 soon; do
  status=0
  err=$("$server" --port 0 --defer-accept "$value" 2>&1 >/dev/null) || status=$?
  [[ $status -eq 2 ]] || fail "--defer-accept $value exited $status, want 2"
  [[ "$err" == *"--defer-accept"* ]] || fail "--defer-accept $value: unclear message '$err'"
done
echo PASS
