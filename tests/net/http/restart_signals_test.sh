#!/usr/bin/env bash
# SIGTERM during a restart stops both generations of http_server gracefully,
# and coro_http_server restarts on SIGHUP; the checks are in
# restart_signals_test.py (run by Debian's python3).
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
http_server=$(runfile examples/http/http_server)
coro_http_server=$(runfile examples/http/coro_http_server)
[[ -x /usr/bin/python3 ]] || fail "/usr/bin/python3 is needed (tools/setup.sh installs it)"
exec timeout -k 5 280 /usr/bin/python3 "$(dirname "$0")/restart_signals_test.py" \
  "$http_server" "$coro_http_server"
