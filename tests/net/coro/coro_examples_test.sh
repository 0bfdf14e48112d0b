#!/usr/bin/env bash
# Runs coro_examples_test.py on the coroutine echo and HTTP servers.
set -euo pipefail
bin() { echo "${TEST_SRCDIR}/libnet/$1"; }
exec python3 "$(bin tests/net/coro/coro_examples_test.py)" \
  "$(bin examples/echo/coro_echo_server)" "$(bin examples/echo/echo_client)" \
  "$(bin examples/http/coro_http_server)"
