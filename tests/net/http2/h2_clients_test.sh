#!/usr/bin/env bash
# http_server over HTTP/2 against curl, nghttp and h2load, on both backends,
# h2c and TLS; the checks are in h2_clients_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
PKI=$(runfile tests/net/tls/make_test_pki)
HTTP=$(runfile examples/http/http_server)
for tool in curl nghttp h2load cmp; do
  command -v "$tool" >/dev/null || fail "$tool is needed (tools/setup.sh installs it)"
done
# Debian's python3: python3-h2 is installed for it, not for a python3 found
# earlier on PATH.
PYTHON=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
"$PYTHON" -c 'import h2, hpack' 2>/dev/null || fail "python3-h2 is needed (tools/setup.sh)"
exec timeout -k 5 280 "$PYTHON" "$(dirname "$0")/h2_clients_test.py" "$PKI" "$HTTP"
