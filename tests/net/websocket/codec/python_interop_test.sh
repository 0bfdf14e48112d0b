#!/usr/bin/env bash
# The codec against Python's websockets library; the checks are in
# python_interop_test.py. Debian's /usr/bin/python3 has python3-websockets
# (tools/setup.sh installs it).
set -euo pipefail
dir=$(dirname "$0")
binary=$dir/interop_main
[[ -x $binary ]] || binary=${TEST_SRCDIR:-}/libnet/tests/net/websocket/codec/interop_main
/usr/bin/python3 -c 'import websockets' 2>/dev/null || {
  echo "python3-websockets is needed for /usr/bin/python3 (tools/setup.sh installs it)" >&2
  exit 1
}
exec timeout -k 5 120 /usr/bin/python3 "$dir/python_interop_test.py" "$binary"
