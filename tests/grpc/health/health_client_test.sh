#!/usr/bin/env bash
# HealthService on generated_test_server against grpcio's client with stubs
# made from health.proto, on both backends; the checks are in
# health_client_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../../net/test_lib.sh"
SERVER=$(runfile tests/grpc/gen/generated_test_server)
ROOT=$(cd "$(dirname "$SERVER")/../../.." && pwd)
PYTHON=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
"$PYTHON" -c 'import grpc, h2, hpack' 2>/dev/null || fail "python3-grpcio and python3-h2 are needed (tools/setup.sh)"
exec timeout -k 5 200 "$PYTHON" "$(dirname "$0")/health_client_test.py" "$SERVER" "$ROOT" \
  "$ROOT/tests/net/http2" "$ROOT/tests/grpc/gen"
