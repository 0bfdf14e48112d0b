#!/usr/bin/env bash
# What a gRPC server sends and receives over HTTP/2 (streamed_body_server:
# trailers, trailers-only answers, resets with a code) against python3-h2,
# on both backends; the checks are in
# h2_trailers_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
SERVER=$(runfile tests/net/http2/streamed_body_server)
# Debian's python3: python3-h2 is installed for it.
PYTHON=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
"$PYTHON" -c 'import h2, hpack' 2>/dev/null || fail "python3-h2 is needed (tools/setup.sh)"
exec timeout -k 5 200 "$PYTHON" "$(dirname "$0")/h2_trailers_test.py" "$SERVER"
