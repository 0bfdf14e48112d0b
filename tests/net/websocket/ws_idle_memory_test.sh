#!/usr/bin/env bash
# A WebSocket server's RSS once its connections are idle again after one
# 16 MiB message each: bench/websocket/ws_idle_memory.py against
# ws_echo_server (callbacks) and coro_http_server's /ws (coroutines), with
# and without permessage-deflate, both backends. Eight connections; each may
# leave at most 4 MiB behind (a loop's pool of spare buffers, at most 8 MiB,
# and zlib's state count in it); before the WebSocket gave its message and
# frame storage back, each left 16.8 MiB (33.9 MiB with deflate).
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
root=""
for path in "${TEST_SRCDIR:-}/libnet" "${RUNFILES_DIR:-}/libnet"; do
  [[ -f "$path/bench/websocket/ws_idle_memory.py" ]] && root=$path && break
done
[[ -n "$root" ]] || fail "ws_idle_memory.py is not in the runfiles"
PYTHON=/usr/bin/python3  # Debian's: the websockets module is installed for it
"$PYTHON" -c 'import websockets' 2>/dev/null || fail "python3-websockets is needed (tools/setup.sh)"
timeout -k 5 600 "$PYTHON" "$root/bench/websocket/ws_idle_memory.py" --bindir "$root" \
  --connections 8 --settle 2 --max-idle-per-connection $((4 * 1024 * 1024))
