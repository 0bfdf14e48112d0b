#!/usr/bin/env bash
# Heap allocations per echoed message in the ping-pong servers, callback and
# coroutine (pingpong_server, coro_pingpong_server), on each backend: the
# server runs with bench/alloc/count_allocs.c preloaded; pingpong_client runs
# SESSIONS sessions of 16 KiB messages for a warm-up second, the count is
# reset, then a second client run of SECONDS is counted. Printed per server:
# allocations, messages, allocations per message, and allocations per
# session of the counted run (its connects and closes are in the count: a
# coroutine connection costs its frames, its stream state and what a
# callback connection costs).
#
#   bench/alloc/allocs_per_message.sh [BINDIR] [SESSIONS] [SECONDS]
#
# Default BINDIR: bazel-bin/pingpong (build //pingpong:all with --config=opt
# first); SESSIONS 100; SECONDS 3. Needs gcc.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BINDIR=${1:-$ROOT/bazel-bin/pingpong}
SESSIONS=${2:-100}
SECONDS_=${3:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
gcc -O2 -shared -fPIC -o "$WORK/count_allocs.so" "$ROOT/bench/alloc/count_allocs.c"
for server in pingpong_server coro_pingpong_server; do
  for backend in epoll uring; do
    client_flags=(--backend "$backend")
    [[ $server == coro_* ]] && client_flags+=(--coro)
    out="$WORK/server.$server.$backend"
    : >"$out"
    COUNT_ALLOCS_OUT="$WORK/count.$server.$backend" LD_PRELOAD="$WORK/count_allocs.so" \
      "$BINDIR/$server" --backend "$backend" 127.0.0.1 0 0 >"$out" 2>&1 &
    pid=$!
    for _ in $(seq 100); do grep -q listening "$out" && break; sleep 0.1; done
    port=$(grep -o 'listening on [0-9.]*:[0-9]*' "$out" | sed 's/.*://')
    "$BINDIR/pingpong_client" "${client_flags[@]}" 127.0.0.1 "$port" 1 16384 "$SESSIONS" 1 >/dev/null
    sleep 0.3  # the warm-up's connections close
    kill -USR2 "$pid"
    sleep 0.2
    result=$("$BINDIR/pingpong_client" "${client_flags[@]}" 127.0.0.1 "$port" 1 16384 \
      "$SESSIONS" "$SECONDS_" | grep RESULT)
    sleep 0.3
    kill -USR2 "$pid"
    sleep 0.2
    kill -TERM "$pid"
    wait "$pid" || true
    messages=$(sed 's/.*messages=\([0-9]*\).*/\1/' <<<"$result")
    allocs=$(sed -n 2p "$WORK/count.$server.$backend" | awk '{print $2}')
    awk -v s="$server" -v b="$backend" -v a="$allocs" -v m="$messages" -v n="$SESSIONS" \
      'BEGIN { printf "%s %s: %d allocations, %d messages: %.5f per message, %.1f per session\n",
               s, b, a, m, a / m, a / n }'
  done
done
