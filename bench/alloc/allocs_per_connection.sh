#!/usr/bin/env bash
# Heap allocations per short connection (accept, GET, response, close) in
# examples/http's http_server, on each backend: the server runs with
# bench/alloc/count_allocs.c preloaded; wrk makes connections for a few
# seconds (`Connection: close`); the count over the run divided by wrk's
# request count is printed.
#
#   bench/alloc/allocs_per_connection.sh [HTTP_SERVER] [PATH] [CONNS]
#
# Default HTTP_SERVER: bazel-bin/examples/http/http_server (build it with
# --config=opt first); PATH /hello; CONNS 100. Needs gcc and wrk.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SERVER=${1:-$ROOT/bazel-bin/examples/http/http_server}
URLPATH=${2:-/hello}
CONNS=${3:-100}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -shared -fPIC -o "$WORK/count_allocs.so" "$ROOT/bench/alloc/count_allocs.c"
mkdir "$WORK/www"
head -c 1024 /dev/urandom >"$WORK/www/1k.bin"
for backend in epoll uring; do
  COUNT_ALLOCS_OUT="$WORK/count.$backend" LD_PRELOAD="$WORK/count_allocs.so" \
    "$SERVER" --address 127.0.0.1 --port 0 --backend "$backend" --root "$WORK/www" \
    >"$WORK/server.$backend" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$WORK/server.$backend" && break; sleep 0.1; done
  port=$(grep -o 'listening on [0-9.]*:[0-9]*' "$WORK/server.$backend" | sed 's/.*://')
  # One short run first, so that pools and tables have grown to their
  # working size; then the count starts from zero.
  wrk -t1 -c"$CONNS" -d1s -H 'Connection: close' "http://127.0.0.1:$port$URLPATH" >/dev/null
  kill -USR2 "$pid"
  sleep 0.2
  wrk -t1 -c"$CONNS" -d3s -H 'Connection: close' "http://127.0.0.1:$port$URLPATH" >"$WORK/wrk.$backend"
  sleep 0.5  # the last connections' teardown
  kill -USR2 "$pid"
  sleep 0.2
  kill -TERM "$pid"
  wait "$pid" || true
  requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.$backend")
  allocs=$(sed -n 2p "$WORK/count.$backend" | awk '{print $2}')
  awk -v b="$backend" -v a="$allocs" -v r="$requests" \
    'BEGIN { printf "%s: %d allocations over %d short connections: %.2f per connection\n", b, a, r, a / r }'
done
