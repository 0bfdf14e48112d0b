#!/usr/bin/env bash
# http_server --inspect-path end to end on both backends: listings with
# known connections, a profile google-pprof reads, one profile at a time,
# bad lengths and flags; the checks are in inspector_http_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
HTTP_SERVER=$(runfile examples/http/http_server)
command -v google-pprof >/dev/null || fail "google-pprof is needed (tools/setup.sh installs it)"
exec timeout -k 5 280 /usr/bin/python3 "$(dirname "$0")/inspector_http_test.py" "$HTTP_SERVER"
