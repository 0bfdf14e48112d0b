#!/usr/bin/env bash
# ws_echo_server against python3-websockets and hand-made hostile frames, on
# both backends, plain and TLS; the checks are in ws_echo_python_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
SERVER=$(runfile examples/websocket/ws_echo_server)
MAKE_PKI=$(runfile tests/net/tls/make_test_pki)
# Debian's python3: the websockets module is installed for it, not for a
# python3 found earlier on PATH.
PYTHON=/usr/bin/python3
"$PYTHON" -c 'import websockets' 2>/dev/null || fail "python3-websockets is needed (tools/setup.sh)"
for backend in epoll uring; do
  timeout -k 5 200 "$PYTHON" "$(dirname "$0")/ws_echo_python_test.py" "$SERVER" "$backend" "$MAKE_PKI"
done
