#!/usr/bin/env bash
# examples/http:coro_http_server's /ws endpoint against python3-websockets, on
# both backends; the checks are in coro_http_ws_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
SERVER=$(runfile examples/http/coro_http_server)
PYTHON=/usr/bin/python3  # Debian's: the websockets module is installed for it
"$PYTHON" -c 'import websockets' 2>/dev/null || fail "python3-websockets is needed (tools/setup.sh)"
for backend in epoll uring; do
  timeout -k 5 120 "$PYTHON" "$(dirname "$0")/coro_http_ws_test.py" "$SERVER" "$backend"
done
