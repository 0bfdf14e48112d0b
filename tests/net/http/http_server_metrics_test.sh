#!/usr/bin/env bash
# http_server --metrics-path serves Prometheus text that moves by exactly the
# traffic made, and --max-connections / --max-connections-per-client refuse
# with 503; the checks are in http_server_metrics_test.py (run by Debian's
# python3, which has python3-prometheus-client).
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
SERVER=$(runfile examples/http/http_server)
[[ -x /usr/bin/python3 ]] || fail "/usr/bin/python3 is needed (tools/setup.sh installs it)"
exec timeout -k 5 50 /usr/bin/python3 "$(dirname "$0")/http_server_metrics_test.py" "$SERVER"
