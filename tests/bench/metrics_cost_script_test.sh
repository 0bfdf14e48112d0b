#!/usr/bin/env bash
# bench/metrics/run_metrics_cost.py works end to end in its quick mode on
# both backends: every run succeeds and each backend gets its RESULT line
# with positive CPU per message on both sides. Timings are never judged.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

root=""
for path in "${TEST_SRCDIR:-}/libnet" "${RUNFILES_DIR:-}/libnet"; do
  [[ -f "$path/bench/metrics/run_metrics_cost.py" ]] && root=$path && break
done
[[ -n "$root" ]] || fail "the script is not in the runfiles"
python=$(command -v python3) || fail "no python3"

out=$(timeout -k 5 50 "$python" "$root/bench/metrics/run_metrics_cost.py" --quick \
  --bindir "$root/pingpong" 2>/dev/null) || fail "run_metrics_cost.py exited $?: $out"
for backend in epoll uring; do
  line=$(grep "^RESULT backend=$backend " <<<"$out") || fail "no $backend result: $out"
  [[ "$line" =~ off_us_per_msg=([0-9.]+)\ on_us_per_msg=([0-9.]+)\ ratio=([0-9.]+) ]] ||
    fail "malformed: $line"
  for value in "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"; do
    [[ "$value" != "0.0000" ]] || fail "no CPU measured: $line"
  done
done
echo OK
