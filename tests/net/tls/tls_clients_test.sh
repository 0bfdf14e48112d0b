#!/usr/bin/env bash
# Real TLS clients (openssl s_client, curl) against the example servers; the
# checks are in tls_clients_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
PKI=$(runfile tests/net/tls/make_test_pki)
ECHO=$(runfile examples/echo/echo_server)
HTTP=$(runfile examples/http/http_server)
for tool in openssl curl python3; do
  command -v "$tool" >/dev/null || fail "$tool is needed (tools/setup.sh installs it)"
done
exec timeout -k 5 280 python3 "$(dirname "$0")/tls_clients_test.py" "$PKI" "$ECHO" "$HTTP"
