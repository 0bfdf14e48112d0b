#!/usr/bin/env bash
# The run scripts of the UDP and resolver benchmarks work end to end on
# short runs with the peers of bench/udp and bench/dns (libnet's programs
# are left out when they are not in the runfiles): every run of every cell
# succeeds and lands in the tables, echo loses nothing, the asio resolver
# runs on two threads and the pool on five, no lookup fails. Timings are
# never looked at. The resolver script needs dnsmasq and namespaces
# (unshare); without them that half is skipped, saying so.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

root=""
for path in "${TEST_SRCDIR:-}/libnet" "${RUNFILES_DIR:-}/libnet"; do
  [[ -f "$path/bench/udp/run_udp_bench.py" ]] && root=$path && break
done
[[ -n "$root" ]] || fail "the run scripts are not in the runfiles"
python=$(command -v python3) || fail "no python3"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# UDP: two servers, both modes, two flow counts, 0.2 s each.
"$python" "$root/bench/udp/run_udp_bench.py" --bindir "$root" --servers asio,floor \
  --sizes 64 --flows 1,4 --modes oneway,echo --seconds 0.2 --runs 1 --no-netns \
  --csv "$scratch/udp.csv" >"$scratch/udp.md" 2>"$scratch/udp.err" ||
  fail "run_udp_bench.py exited $?: $(tail -5 "$scratch/udp.err")"
for mode in oneway echo; do
  grep -q "^### UDP $mode" "$scratch/udp.md" || fail "no $mode table: $(cat "$scratch/udp.md")"
done
rows=$(grep -c '^| 64 |' "$scratch/udp.md") || true
[[ $rows -eq 4 ]] || fail "expected 4 table rows, got $rows: $(cat "$scratch/udp.md")"
! grep -q 'fail' "$scratch/udp.md" || fail "a run failed: $(grep FAILED "$scratch/udp.err")"
[[ $(($(wc -l <"$scratch/udp.csv") - 1)) -eq 8 ]] || fail "expected 8 CSV rows"
# Echo with one datagram in flight per flow loses nothing on loopback.
echo_rows=$(sed -n '/^### UDP echo/,/^Client:/p' "$scratch/udp.md" | grep '^| 64 |') ||
  fail "no echo rows: $(cat "$scratch/udp.md")"
while read -r row; do
  [[ "$row" == *"| 0.00, 0.00 |"* ]] || fail "echo lost datagrams: $row"
done <<<"$echo_rows"

# Resolver: asio and the pool against dnsmasq, 100 lookups at 1 and 10 in flight.
if ! command -v dnsmasq >/dev/null && [[ ! -x /usr/sbin/dnsmasq ]]; then
  echo "SKIP resolver half: no dnsmasq"
elif ! unshare --mount --net true 2>/dev/null &&
  ! unshare --map-root-user --mount --net true 2>/dev/null; then
  echo "SKIP resolver half: no mount and network namespaces here"
else
  "$python" "$root/bench/dns/run_dns_bench.py" --bindir "$root" \
    --peers asio,getaddrinfo-pool --count 100 --inflight 1,10 --runs 1 \
    >"$scratch/dns.md" 2>"$scratch/dns.err" ||
    fail "run_dns_bench.py exited $?: $(tail -5 "$scratch/dns.err")"
  # ThreadSanitizer runs a background thread of its own in every process.
  extra=0
  [[ -z "${TSAN_OPTIONS:-}" ]] || extra=1
  for inflight in 1 10; do
    grep -Eq "^\| $inflight \| asio \| [0-9]+ \| [0-9.]+ \| $((2 + extra)) \| 0 \|" "$scratch/dns.md" ||
      fail "no asio row at $inflight in flight: $(cat "$scratch/dns.md")"
    grep -Eq "^\| $inflight \| getaddrinfo-pool \| [0-9]+ \| [0-9.]+ \| $((5 + extra)) \| 0 \|" \
      "$scratch/dns.md" || fail "no pool row at $inflight in flight: $(cat "$scratch/dns.md")"
  done
fi
echo PASS
