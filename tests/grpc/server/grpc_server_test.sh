#!/usr/bin/env bash
# grpc_test_server against grpcio's client (python3-grpcio), on both
# backends; the checks are in grpc_server_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../../net/test_lib.sh"
SERVER=$(runfile tests/grpc/server/grpc_test_server)
PKI=$(runfile tests/net/tls/make_test_pki)
H2PEER="$(dirname "$0")/../../net/http2"
# Debian's python3: python3-grpcio and python3-h2 are installed for it.
PYTHON=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
"$PYTHON" -c 'import grpc, h2, hpack' 2>/dev/null || fail "python3-grpcio and python3-h2 are needed (tools/setup.sh)"
exec timeout -k 5 280 "$PYTHON" "$(dirname "$0")/grpc_server_test.py" "$SERVER" "$H2PEER" "$PKI"
