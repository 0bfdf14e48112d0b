#!/usr/bin/env bash
# bench/http/run_h2_bench.py works end to end on short runs: h2load against
# nginx and libnet's http_server on both backends, h2 over TLS and h2c, 10
# and 100 streams per connection, the 14-byte and the 16 KiB file. Every
# server passes the script's byte-exact pre-check, every run passes its
# checks (protocol, no failed or errored request, the right bytes per
# response), and the table and the RESULT lines have a measured row for each
# of the 24 combinations. Timings are never looked at. Without h2load,
# nghttp or nginx it is skipped, saying so.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

root=""
for path in "${TEST_SRCDIR:-}/libnet" "${RUNFILES_DIR:-}/libnet"; do
  [[ -f "$path/bench/http/run_h2_bench.py" ]] && root=$path && break
done
[[ -n "$root" ]] || fail "run_h2_bench.py is not in the runfiles"
[[ -x "$root/examples/http/http_server" ]] || fail "http_server is not in the runfiles"
python=/usr/bin/python3

skip=""
command -v h2load >/dev/null || skip="no h2load (nghttp2-client)"
command -v nghttp >/dev/null || skip="no nghttp (nghttp2-client)"
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || skip="no nginx"
if [[ -n "$skip" ]]; then
  echo "SKIP: $skip"
  echo PASS
  exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

status=0
# A warm-up long enough for ten TLS handshakes on a loaded machine: a window
# with no request done is a failed run.
"$python" "$root/bench/http/run_h2_bench.py" --quick --seconds 0.3 --warmup 0.6 \
  --no-build --bindir "$root" --no-netns --csv "$scratch/h2.csv" \
  >"$scratch/h2.md" 2>"$scratch/h2.err" || status=$?
[[ $status -eq 0 ]] ||
  fail "run_h2_bench.py exited $status: $(grep -E 'FAILED|Error|error' "$scratch/h2.err" | tail -5)"
grep -q "^- Machine: " "$scratch/h2.md" || fail "no machine line: $(cat "$scratch/h2.md")"
grep -q "^- Command: " "$scratch/h2.md" || fail "no command line: $(cat "$scratch/h2.md")"
! grep -q "not measured" "$scratch/h2.md" || fail "$(grep "not measured" "$scratch/h2.md")"

number='[0-9]+(\.[0-9]+)?'
for mode in tls h2c; do
  for streams in 10 100; do
    for size in 14 16384; do
      for server in nginx libnet-epoll libnet-uring; do
        cell="$mode | 10 | $streams | $size | $server"
        # The ratios to nginx: "-" in nginx's own row.
        ratios='- \| -'
        [[ $server == nginx ]] || ratios="$number \| $number"
        grep -Eq "^\| ${cell//|/\\|} \| [0-9]+ \| $number \| [0-9]+ \| [0-9]+ \| $ratios \|$" \
          "$scratch/h2.md" || fail "no measured row '$cell': $(cat "$scratch/h2.md")"
        result="mode=$mode conns=10 streams=$streams file=$size server=$server runs=1"
        grep -Eq "^RESULT $result rps=[0-9]+ cpu_us=$number " \
          "$scratch/h2.md" || fail "no RESULT line for '$cell'"
      done
    done
  done
done
rows=$(grep -c '^RESULT ' "$scratch/h2.md") || true
[[ $rows -eq 24 ]] || fail "expected 24 RESULT lines, got $rows"
[[ $(($(wc -l <"$scratch/h2.csv") - 1)) -eq 24 ]] || fail "expected 24 CSV rows"
! grep -q FAILED "$scratch/h2.err" || fail "a run failed: $(grep FAILED "$scratch/h2.err")"
echo PASS
