#!/usr/bin/env bash
# examples/echo's echo_client against a loopback port that refuses
# connections, on each backend and with one and several connections: it must
# exit 1 at once with "connect to 127.0.0.1:PORT: Connection refused" on
# stderr, not wait out its --timeout. The port is held bound but not
# listening by refusing_port_main for the whole run. Last, the same by host
# name (--host localhost through dns::Resolver and Happy Eyeballs).
set -euo pipefail

# The client's own timeout, far above BOUND: a client that waits for it
# instead of failing fast is killed by `timeout` and fails the test.
readonly CLIENT_TIMEOUT=30
readonly BOUND=10  # seconds for the whole run of one client

# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

CLIENT=$(runfile examples/echo/echo_client)
REFUSING=$(runfile tests/net/refusing_port_main)
readonly CLIENT REFUSING
WORK=${TEST_TMPDIR:-$(mktemp -d)}
readonly WORK

"$CLIENT" --help | grep -q "fails (refused, unreachable) ends the run at once" || fail "--help does not say a failed connect ends the run"

# check BACKEND CONNECTIONS
check() {
  local backend=$1 connections=$2
  local name="$backend.$connections"
  local start status=0
  start=$(date +%s%N)
  LIBNET_POLLER=$backend timeout -k 5 "$BOUND" "$REFUSING" "$CLIENT" --address 127.0.0.1 \
    --port '{port}' --connections "$connections" --timeout "$CLIENT_TIMEOUT" \
    >"$WORK/$name.out" 2>"$WORK/$name.err" || status=$?
  local elapsedMs=$((($(date +%s%N) - start) / 1000000))
  [[ $status -ne 124 && $status -ne 137 ]] ||
    fail "$name: echo_client still running after ${BOUND}s (its --timeout is ${CLIENT_TIMEOUT}s)"
  local port
  port=$(sed -n '1s/^port \([0-9][0-9]*\)$/\1/p' "$WORK/$name.out")
  [[ -n "$port" ]] || fail "$name: no port from refusing_port_main: $(cat "$WORK/$name.out" "$WORK/$name.err")"
  [[ $status -eq 1 ]] || { cat "$WORK/$name.err" >&2; fail "$name: exit status $status, wanted 1"; }
  grep -q "^echo_client: connect to 127\.0\.0\.1:$port: Connection refused$" "$WORK/$name.err" || {
    cat "$WORK/$name.err" >&2
    fail "$name: no 'connect to 127.0.0.1:$port: Connection refused' on stderr"
  }
  # One failure, one message, however many connections were refused.
  local messages
  messages=$(grep -c "^echo_client: " "$WORK/$name.err" || true)
  [[ $messages -eq 1 ]] || { cat "$WORK/$name.err" >&2; fail "$name: $messages messages, wanted 1"; }
  ! grep -q "Sanitizer" "$WORK/$name.err" || { cat "$WORK/$name.err" >&2; fail "$name: sanitizer report"; }
  echo "ok: $name, exit 1 after ${elapsedMs} ms: $(grep "^echo_client: " "$WORK/$name.err")"
}

# Without io_uring the uring runs fall back to epoll, and still must pass.
for backend in epoll uring; do
  check "$backend" 1
  check "$backend" 20
done

# By name (--host localhost, from /etc/hosts): every address the name has is
# tried (Happy Eyeballs) and every refusal is in the one message.
for backend in epoll uring; do
  status=0
  LIBNET_POLLER=$backend timeout -k 5 "$BOUND" "$REFUSING" "$CLIENT" --host localhost \
    --port '{port}' --connections 3 --timeout "$CLIENT_TIMEOUT" \
    >"$WORK/name.$backend.out" 2>"$WORK/name.$backend.err" || status=$?
  port=$(sed -n '1s/^port \([0-9][0-9]*\)$/\1/p' "$WORK/name.$backend.out")
  [[ $status -eq 1 ]] || { cat "$WORK/name.$backend.err" >&2; fail "by name ($backend): exit status $status, wanted 1"; }
  grep -q "^echo_client: localhost:$port: .*127\.0\.0\.1:$port: Connection refused" \
    "$WORK/name.$backend.err" || {
    cat "$WORK/name.$backend.err" >&2
    fail "by name ($backend): the refusal of 127.0.0.1:$port is not reported"
  }
  echo "ok: by name ($backend): $(grep "^echo_client: " "$WORK/name.$backend.err")"
done
