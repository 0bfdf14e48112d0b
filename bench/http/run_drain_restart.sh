#!/usr/bin/env bash
# Drain and restart of http_server under wrk, on both backends, with and
# without an I/O thread: wrk's error counts (docs/benchmarks.md, "Operations").
# SIGHUP 2 s into a 6 s run (restart: every count must be zero), SIGTERM
# 1.5 s into a 3 s run (drain: read/timeout/non-2xx zero; "write" errors are
# wrk's reconnects refused once the listener is closed).
set -u
# BIN: an optimized http_server (bazel build --config=opt //examples/http:http_server).
BIN=${BIN:-bazel-bin/examples/http/http_server}
[[ -x "$BIN" ]] || { echo "no $BIN: build it first (see above)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is needed (tools/setup.sh)" >&2; exit 2; }
run() { # backend threads signal at_seconds duration
  local backend=$1 threads=$2 sig=$3 at=$4 dur=$5 out
  out=$(mktemp)
  setsid "$BIN" --port 0 --address 127.0.0.1 --backend "$backend" --threads "$threads" > "$out" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do grep -q "listening on" "$out" && break; sleep 0.1; done
  local port; port=$(grep -m1 "listening on" "$out" | sed 's/.*://')
  taskset -c 1 wrk -t1 -c50 -d"${dur}s" "http://127.0.0.1:$port/hello" > "$out.wrk" 2>&1 &
  local wrk=$!
  sleep "$at"; kill -"$sig" "$pid"
  wait "$wrk"
  local status=0
  if [[ $sig == HUP ]]; then
    wait "$pid"; status=$?
    local code; code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/hello")
    # The old process named its successor ("successor PID is serving").
    local successor; successor=$(grep -o "successor [0-9]* is serving" "$out" | grep -o "[0-9]*")
    [[ -n "$successor" ]] && kill -TERM "$successor" && while kill -0 "$successor" 2>/dev/null; do sleep 0.1; done
    echo "$backend threads=$threads SIGHUP at ${at}s: old exit $status, successor /hello $code"
  else
    wait "$pid"; status=$?
    echo "$backend threads=$threads SIGTERM at ${at}s: exit $status"
  fi
  grep -E "requests in|Socket errors|Non-2xx|Requests/sec" "$out.wrk" | sed 's/^/    /'
  rm -f "$out" "$out.wrk"
}
for b in epoll uring; do
  for t in 0 1; do
    run "$b" "$t" HUP 2 6
    run "$b" "$t" TERM 1.5 3
  done
done
