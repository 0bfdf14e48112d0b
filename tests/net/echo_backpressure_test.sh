#!/usr/bin/env bash
# examples/echo's echo_server bounds what a sender that never reads can make
# it hold (--max-queued-output); the checks are in echo_backpressure_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
SERVER=$(runfile examples/echo/echo_server)
command -v python3 >/dev/null || fail "python3 is needed (tools/setup.sh installs it)"
exec timeout -k 5 240 python3 "$(dirname "$0")/echo_backpressure_test.py" "$SERVER"
