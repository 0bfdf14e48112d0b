#!/usr/bin/env bash
# examples/dns:resolve end to end against a dnsmasq started here (fixed
# records, no upstream), on each backend: "NAME ADDRESS" per address on
# stdout, exit 0 when all resolved; exit 1 with "NAME: NXDOMAIN" on stderr
# when one did not (the others still printed); exit 2 on bad arguments.
set -euo pipefail

# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"

RESOLVE=$(runfile examples/dns/resolve)
readonly RESOLVE
WORK=${TEST_TMPDIR:-$(mktemp -d)}
readonly WORK

DNSMASQ_PID=
cleanup() {
  if [[ -n "$DNSMASQ_PID" ]]; then
    kill "$DNSMASQ_PID" 2>/dev/null || true
    wait "$DNSMASQ_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

free_udp_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts dnsmasq on a free port (another one if that port is taken by the
# time it binds); sets PORT. Bounded: dnsmasq logs "started" once bound.
start_dnsmasq() {
  local attempt
  for attempt in 1 2 3 4 5 6 7 8 9 10; do
    PORT=$(free_udp_port)
    : >"$WORK/dnsmasq.log"
    /usr/sbin/dnsmasq --no-daemon --no-resolv --no-hosts --conf-file=/dev/null --pid-file= \
      --log-facility=- --user=root --port="$PORT" --listen-address=127.0.0.1 --bind-interfaces \
      --local=/test/ --host-record=both.dns.test,10.0.0.1,fd00::1 \
      --host-record=v4only.dns.test,10.0.0.2 2>"$WORK/dnsmasq.log" &
    DNSMASQ_PID=$!
    local waited
    for waited in $(seq 1 100); do
      grep -q "started, version" "$WORK/dnsmasq.log" && return 0
      kill -0 "$DNSMASQ_PID" 2>/dev/null || break
      sleep 0.1
    done
    cleanup
    DNSMASQ_PID=
  done
  fail "dnsmasq did not start: $(cat "$WORK/dnsmasq.log")"
}

start_dnsmasq
SERVER="127.0.0.1:$PORT"

for backend in epoll uring; do
  status=0
  timeout -k 5 20 "$RESOLVE" --server "$SERVER" --backend "$backend" --timeout-ms 5000 \
    both.dns.test v4only.dns.test >"$WORK/ok.out" 2>"$WORK/ok.err" || status=$?
  [[ $status -eq 0 ]] || fail "$backend: exit $status for names that exist: $(cat "$WORK/ok.err")"
  expected=$'both.dns.test 10.0.0.1\nboth.dns.test fd00::1\nv4only.dns.test 10.0.0.2'
  [[ "$(sort "$WORK/ok.out")" == "$expected" ]] ||
    fail "$backend: output was:"$'\n'"$(cat "$WORK/ok.out")"$'\n'"wanted:"$'\n'"$expected"

  status=0
  timeout -k 5 20 "$RESOLVE" --server "$SERVER" --backend "$backend" no.such.test both.dns.test \
    >"$WORK/nx.out" 2>"$WORK/nx.err" || status=$?
  [[ $status -eq 1 ]] || fail "$backend: exit $status for an NXDOMAIN, wanted 1"
  grep -qx "no.such.test: NXDOMAIN" "$WORK/nx.err" ||
    fail "$backend: no 'no.such.test: NXDOMAIN' on stderr: $(cat "$WORK/nx.err")"
  grep -qx "both.dns.test 10.0.0.1" "$WORK/nx.out" ||
    fail "$backend: the name that resolved was not printed: $(cat "$WORK/nx.out")"
  ! grep -q "no.such.test" "$WORK/nx.out" || fail "$backend: a failed name on stdout"
  echo "ok: $backend"
done

# Numeric addresses need no server (none listens at port 1).
status=0
"$RESOLVE" --server 127.0.0.1:1 127.0.0.1 ::1 >"$WORK/num.out" 2>"$WORK/num.err" || status=$?
[[ $status -eq 0 ]] || fail "numeric: exit $status: $(cat "$WORK/num.err")"
[[ "$(cat "$WORK/num.out")" == $'127.0.0.1 127.0.0.1\n::1 ::1' ]] || fail "numeric: $(cat "$WORK/num.out")"

# Bad arguments: usage error, exit 2.
for args in "--server" "--server nohost:53 x.test" "--server 127.0.0.1 x.test" \
  "--timeout-ms 0 x.test" "--backend nope x.test" "--bogus x.test" ""; do
  status=0
  # shellcheck disable=SC2086
  "$RESOLVE" $args >/dev/null 2>"$WORK/usage.err" || status=$?
  [[ $status -eq 2 ]] || fail "'resolve $args': exit $status, wanted 2"
  grep -q "resolve" "$WORK/usage.err" || fail "'resolve $args': nothing on stderr"
done
"$RESOLVE" --help | grep -q "^usage: resolve" || fail "--help prints no usage"
echo "ok: numeric, usage"
