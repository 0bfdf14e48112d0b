#!/usr/bin/env bash
# examples/http's http_server behind haproxy speaking the PROXY protocol (v1
# and v2), and forged headers sent to it directly; the checks are in
# proxy_protocol_haproxy_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
SERVER=$(runfile examples/http/http_server)
# Debian's python3, which has python3-prometheus-client (the PATH one may not).
[[ -x /usr/bin/python3 ]] || fail "/usr/bin/python3 is needed (tools/setup.sh installs it)"
command -v haproxy >/dev/null || fail "haproxy is needed (tools/setup.sh installs it)"
exec timeout -k 5 200 /usr/bin/python3 "$(dirname "$0")/proxy_protocol_haproxy_test.py" "$SERVER"
