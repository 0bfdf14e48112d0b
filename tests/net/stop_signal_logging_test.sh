#!/usr/bin/env bash
# SIGTERM sent mid-load stops echo_server and pingpong_server with --log-dir
# cleanly on both backends: exit status 0, every loaded connection closed,
# every connection's lines in the log; the checks are in
# stop_signal_logging_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
ECHO_SERVER=$(runfile examples/echo/echo_server)
PINGPONG_SERVER=$(runfile pingpong/pingpong_server)
command -v python3 >/dev/null || fail "python3 is needed (tools/setup.sh installs it)"
exec timeout -k 5 280 python3 "$(dirname "$0")/stop_signal_logging_test.py" \
  "$ECHO_SERVER" "$PINGPONG_SERVER"
