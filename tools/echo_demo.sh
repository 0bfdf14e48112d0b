#!/usr/bin/env bash
# Builds the echo example, starts echo_server on a free loopback port, talks to
# it with echo_client (several connections, every byte checked) and stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

bazel build --config=opt //examples/echo:echo_server //examples/echo:echo_client
bin=$(bazel info --config=opt bazel-bin 2>/dev/null)/examples/echo

log=$(mktemp)
"$bin/echo_server" --address 127.0.0.1 --port 0 --threads 2 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log"' EXIT

# The server prints "echo_server listening on 127.0.0.1:PORT" once it listens.
for _ in $(seq 100); do
  grep -q 'listening on' "$log" && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.05
done
port=$(sed -n 's/.*listening on .*:\([0-9]*\)$/\1/p' "$log" | head -1)
[[ -n "$port" ]] || { echo "echo_server did not start" >&2; cat "$log" >&2; exit 1; }
echo "echo_server is listening on 127.0.0.1:$port"

"$bin/echo_client" --address 127.0.0.1 --port "$port" --connections 10 --count 100 \
  --message "hello from libnet's echo_client"

kill -TERM $server
wait $server
echo "echo_server stopped cleanly"
