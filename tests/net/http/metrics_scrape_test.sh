#!/usr/bin/env bash
# Concurrent scrapes of http_server's /metrics never block an I/O loop; the
# checks are in metrics_scrape_test.py (run by Debian's python3, which has
# python3-prometheus-client).
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
server=$(runfile examples/http/http_server)
[[ -x /usr/bin/python3 ]] || fail "/usr/bin/python3 is needed (tools/setup.sh installs it)"
exec timeout -k 5 280 /usr/bin/python3 "$(dirname "$0")/metrics_scrape_test.py" "$server"
