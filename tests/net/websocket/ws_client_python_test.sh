#!/usr/bin/env bash
# libnet's WebSocket client against a python3-websockets server, on both
# backends; the cases are in ws_client_cases_main.cc, the server in
# ws_client_python_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
CLIENT=$(runfile tests/net/websocket/ws_client_cases)
PYTHON=/usr/bin/python3  # Debian's: the websockets module is installed for it
"$PYTHON" -c 'import websockets' 2>/dev/null || fail "python3-websockets is needed (tools/setup.sh)"
for backend in epoll uring; do
  timeout -k 5 400 "$PYTHON" "$(dirname "$0")/ws_client_python_test.py" "$CLIENT" "$backend"
done
