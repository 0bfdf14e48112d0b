#!/usr/bin/env bash
# What an HTTP/2 connection and the server may hold under heavy and hostile
# peers (uploads, body budget, slow readers, files), on both backends; the
# checks are in h2_limits_test.py.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
HTTP=$(runfile examples/http/http_server)
# Debian's python3: python3-h2 and python3-hpack are installed for it.
PYTHON=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1
"$PYTHON" -c 'import h2, hpack' 2>/dev/null || fail "python3-h2 is needed (tools/setup.sh)"
# Two shards, one backend each, so the two halves run side by side.
if [[ -n "${TEST_TOTAL_SHARDS:-}" ]]; then
  touch "${TEST_SHARD_STATUS_FILE:-/dev/null}"
  backends=(epoll uring)
  export LIBNET_TEST_BACKENDS=${backends[$TEST_SHARD_INDEX]}
fi
exec timeout -k 5 280 "$PYTHON" "$(dirname "$0")/h2_limits_test.py" "$HTTP"
