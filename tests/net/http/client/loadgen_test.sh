#!/usr/bin/env bash
# Runs loadgen_test.py (bench/http:loadgen against the scripted server).
set -euo pipefail
exec /usr/bin/python3 "${TEST_SRCDIR}/libnet/tests/net/http/client/loadgen_test.py"
