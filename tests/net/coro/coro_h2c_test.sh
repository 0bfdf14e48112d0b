#!/usr/bin/env bash
# Runs coro_h2c_test.py on coro_http_server --h2c (both backends).
set -euo pipefail
bin() { echo "${TEST_SRCDIR}/libnet/$1"; }
exec /usr/bin/python3 "$(bin tests/net/coro/coro_h2c_test.py)" \
  "$(bin examples/http/coro_http_server)"
