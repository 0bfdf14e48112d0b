#!/usr/bin/env bash
# SIGUSR1 starts and stops a CPU profile to --profile-dir in http_server and
# coro_http_server, on both backends, that google-pprof reads; the checks
# are in profile_signal_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
HTTP_SERVER=$(runfile examples/http/http_server)
CORO_HTTP_SERVER=$(runfile examples/http/coro_http_server)
command -v google-pprof >/dev/null || fail "google-pprof is needed (tools/setup.sh installs it)"
exec timeout -k 5 280 /usr/bin/python3 "$(dirname "$0")/profile_signal_test.py" \
  "$HTTP_SERVER" "$CORO_HTTP_SERVER"
