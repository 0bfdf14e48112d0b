#!/usr/bin/env bash
# generated_test_server against grpcio's client with stubs made from the
# same .proto files, on both backends; the checks are in
# generated_server_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../../net/test_lib.sh"
SERVER=$(runfile tests/grpc/gen/generated_test_server)
ROOT=$(cd "$(dirname "$SERVER")/../../.." && pwd)
H2PEER="$(dirname "$0")/../../net/http2"
PYTHON=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
"$PYTHON" -c 'import grpc, h2, hpack' 2>/dev/null || fail "python3-grpcio and python3-h2 are needed (tools/setup.sh)"
exec timeout -k 5 200 "$PYTHON" "$(dirname "$0")/generated_server_test.py" "$SERVER" "$ROOT" "$H2PEER"
