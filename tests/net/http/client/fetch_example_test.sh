#!/usr/bin/env bash
# Runs fetch_example_test.py (examples/http:fetch against the scripted server).
set -euo pipefail
exec /usr/bin/python3 "${TEST_SRCDIR}/libnet/tests/net/http/client/fetch_example_test.py"
