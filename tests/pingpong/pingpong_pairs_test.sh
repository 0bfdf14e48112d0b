#!/usr/bin/env bash
# Every ping-pong pair exchanges data: each server with its client, for 1 and
# 50 sessions over 1 second, reports a non-zero byte count; and a checker
# client (examples/echo:echo_client, which compares every byte) proves each
# plain server echoes exactly what it was sent. The TLS pairs (libnet on both
# backends, with callbacks and coroutines, and asio's ssl::stream) run with
# certificates made for the test, also crossed: libnet's client against
# asio's server and asio's client against libnet's (each verifies the other's
# certificate and address). Loopback, ephemeral ports (the
# servers are started on port 0 and print the port they got), every wait
# bounded.
set -euo pipefail

bin() { echo "${TEST_SRCDIR}/libnet/$1"; }
PP_SERVER=$(bin pingpong/pingpong_server)
PP_CLIENT=$(bin pingpong/pingpong_client)
CORO_SERVER=$(bin pingpong/coro_pingpong_server)
ASIO_SERVER=$(bin pingpong/asio/asio_pingpong_server)
ASIO_CLIENT=$(bin pingpong/asio/asio_pingpong_client)
ASIO_CORO_SERVER=$(bin pingpong/asio/asio_coro_pingpong_server)
ASIO_CORO_CLIENT=$(bin pingpong/asio/asio_coro_pingpong_client)
LE_SERVER=$(bin pingpong/libevent/libevent_pingpong_server)
LE_CLIENT=$(bin pingpong/libevent/libevent_pingpong_client)
EPOLL_FLOOR=$(bin pingpong/floor/epoll_floor_server)
URING_FLOOR=$(bin pingpong/floor/uring_floor_server)
ASIO_SSL_SERVER=$(bin pingpong/asio/asio_ssl_pingpong_server)
ASIO_SSL_CLIENT=$(bin pingpong/asio/asio_ssl_pingpong_client)
MAKE_PKI=$(bin tests/net/tls/make_test_pki)
CHECKER=$(bin examples/echo/echo_client)
TMP=${TEST_TMPDIR:-$(mktemp -d)}
MESSAGE=$(head -c 3000 /dev/urandom | base64 -w0)

failures=0
passes=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; passes=$((passes + 1)); }

server_pid=""
stop_server() {
  [[ -n "$server_pid" ]] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  local status=0
  timeout 10 tail --pid="$server_pid" -f /dev/null || { kill -KILL "$server_pid"; status=1; }
  wait "$server_pid" 2>/dev/null || status=$?
  server_pid=""
  return $status
}
trap stop_server EXIT

# start_server NAME CMD...: starts it on 127.0.0.1 port 0; sets $port.
start_server() {
  local name=$1
  shift
  # Created first: the poll below may run before the job has opened it.
  : >"$TMP/$name.out"
  "$@" >>"$TMP/$name.out" 2>"$TMP/$name.err" &
  server_pid=$!
  port=""
  for _ in $(seq 200); do
    port=$(sed -n 's/.*listening on .*:\([0-9][0-9]*\).*/\1/p' "$TMP/$name.out" | head -1)
    [[ -n "$port" ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
  done
  fail "$name server did not start: $(cat "$TMP/$name.err")"
  return 1
}

# check_pair NAME SERVER_CMD... -- CLIENT_CMD...
check_pair() {
  local name=$1
  shift
  local server=() client=()
  while [[ $1 != "--" ]]; do server+=("$1"); shift; done
  shift
  client=("$@")
  start_server "$name" "${server[@]}" 127.0.0.1 0 "$SERVER_THREADS" || return 0
  for sessions in 1 50; do
    local out
    out=$(timeout 60 "${client[@]}" 127.0.0.1 "$port" 1 1024 "$sessions" 1 2>"$TMP/$name.client.err") ||
      { fail "$name client, $sessions sessions: exit $? $(tail -3 "$TMP/$name.client.err")"; continue; }
    local bytes
    bytes=$(sed -n 's/^RESULT .*bytes=\([0-9][0-9]*\).*/\1/p' <<<"$out")
    if [[ -n "$bytes" && "$bytes" -gt 0 ]]; then
      pass "$name, $sessions sessions: $bytes bytes"
    else
      fail "$name, $sessions sessions: no bytes in '$out'"
    fi
  done
  if [[ -n ${NO_CHECKER:-} ]]; then
    :  # a TLS server: the plain checker cannot talk to it
  elif timeout 60 "$CHECKER" --address 127.0.0.1 --port "$port" --connections 5 --count 40 \
      --message "$MESSAGE" >"$TMP/$name.check" 2>&1; then
    pass "$name echoes byte-exact (5 connections x 40 x ${#MESSAGE} bytes)"
  else
    fail "$name checker: $(tail -3 "$TMP/$name.check")"
  fi
  if stop_server; then
    pass "$name server exits 0 on SIGTERM"
  else
    fail "$name server did not exit cleanly"
  fi
}

SERVER_THREADS=0
check_pair libnet-epoll "$PP_SERVER" --backend epoll -- "$PP_CLIENT" --backend epoll
check_pair libnet-uring "$PP_SERVER" --backend uring -- "$PP_CLIENT" --backend uring
check_pair libnet-coro-epoll "$CORO_SERVER" --backend epoll -- "$PP_CLIENT" --backend epoll --coro
check_pair libnet-coro-uring "$CORO_SERVER" --backend uring -- "$PP_CLIENT" --backend uring --coro
SERVER_THREADS=1
check_pair asio "$ASIO_SERVER" -- "$ASIO_CLIENT"
check_pair asio-coro "$ASIO_CORO_SERVER" -- "$ASIO_CORO_CLIENT"
check_pair libevent "$LE_SERVER" -- "$LE_CLIENT"
check_pair floor-epoll "$EPOLL_FLOOR" -- "$PP_CLIENT" --backend epoll
check_pair floor-uring "$URING_FLOOR" -- "$PP_CLIENT" --backend uring

PKI=$TMP/pki
mkdir -p "$PKI"
"$MAKE_PKI" "$PKI" || fail "make_test_pki failed"
TLS_SERVER=(--tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key")
TLS_CLIENT=(--tls-ca "$PKI/ca.pem")
NO_CHECKER=1
SERVER_THREADS=0
check_pair libnet-tls-epoll "$PP_SERVER" --backend epoll "${TLS_SERVER[@]}" -- \
  "$PP_CLIENT" --backend epoll "${TLS_CLIENT[@]}"
check_pair libnet-tls-uring "$PP_SERVER" --backend uring "${TLS_SERVER[@]}" -- \
  "$PP_CLIENT" --backend uring "${TLS_CLIENT[@]}"
check_pair libnet-tls-coro "$CORO_SERVER" --backend uring "${TLS_SERVER[@]}" -- \
  "$PP_CLIENT" --backend epoll --coro "${TLS_CLIENT[@]}"
check_pair asio-client-libnet-tls-server "$PP_SERVER" "${TLS_SERVER[@]}" -- \
  "$ASIO_SSL_CLIENT" "${TLS_CLIENT[@]}"
SERVER_THREADS=1
check_pair asio-ssl "$ASIO_SSL_SERVER" "${TLS_SERVER[@]}" -- "$ASIO_SSL_CLIENT" "${TLS_CLIENT[@]}"
check_pair libnet-tls-client-asio-server "$ASIO_SSL_SERVER" "${TLS_SERVER[@]}" -- \
  "$PP_CLIENT" "${TLS_CLIENT[@]}"
unset NO_CHECKER

echo "pingpong pairs: $passes passed, $failures failed"
[[ $failures -eq 0 ]]
