#!/bin/bash
# Instructions per request of http_server builds, counted by callgrind, so
# that two builds compare on a machine too busy for timings to mean anything.
#
#   bench/http/instructions_per_request.sh MODE BINARY [BINARY...]
#
# MODE: h1 (HTTP/1.1 keep-alive), h1tls (HTTPS keep-alive), h2c, h2tls.
# Each BINARY runs under callgrind (--threads 0, one loop, BACKEND or epoll)
# twice, serving a 14-byte file to `h2load -c 10` (-m 10 for HTTP/2), for
# 2000 and for 12000 requests; (Ir(12000) - Ir(2000)) / 10000 is what one
# request costs, start-up and shutdown cancelled out. Needs valgrind, h2load
# and openssl. Port: PORT or 18431 and up.
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,13p' "$0"; exit 2; }
mode=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'hello, world!\n' >"$dir/f14"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" \
  -days 1 -subj /CN=localhost 2>/dev/null
tls=(--tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem")
case $mode in
  h1) flags=() scheme=http client=(--h1 -m 1) ;;
  h1tls) flags=("${tls[@]}") scheme=https client=(--h1 -m 1) ;;
  h2c) flags=(--h2c) scheme=http client=(-m 10) ;;
  h2tls) flags=("${tls[@]}") scheme=https client=(-m 10) ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
port=${PORT:-18431}

# instructions BINARY REQUESTS: the Ir total of one run.
instructions() {
  local out="$dir/callgrind.$port" pid
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" --threads 0 \
    --backend "${BACKEND:-epoll}" "${flags[@]}" --address 127.0.0.1 --port "$port" \
    --root "$dir" >"$out.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do grep -q listening "$out.log" && break; sleep 0.1; done
  h2load "${client[@]}" -n "$2" -c 10 "$scheme://127.0.0.1:$port/f14" |
    grep -q "$2 succeeded" || { echo "h2load failed against $1" >&2; exit 1; }
  kill -TERM "$pid"
  wait "$pid" || true
  port=$((port + 1))
  awk '/^summary:/ {print $2}' "$out"
}

echo "mode=$mode backend=${BACKEND:-epoll} $(uname -r) $(date -u +%FT%TZ)"
for binary in "$@"; do
  small=$(instructions "$binary" 2000)
  large=$(instructions "$binary" 12000)
  echo "$binary: $(((large - small) / 10000)) instructions per request"
done
