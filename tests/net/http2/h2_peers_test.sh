#!/usr/bin/env bash
# Hostile HTTP/2 peers against http_server, on both backends; the checks are
# in h2_peers_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
PKI=$(runfile tests/net/tls/make_test_pki)
HTTP=$(runfile examples/http/http_server)
# Debian's python3: python3-h2 and python3-hpack are installed for it, not for
# a python3 found earlier on PATH.
PYTHON=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
"$PYTHON" -c 'import h2, hpack' 2>/dev/null || fail "python3-h2 is needed (tools/setup.sh)"
exec timeout -k 5 280 "$PYTHON" "$(dirname "$0")/h2_peers_test.py" "$PKI" "$HTTP"
