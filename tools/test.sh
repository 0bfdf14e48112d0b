#!/usr/bin/env bash
# Runs libnet's whole test suite, installing what is missing first.
#
#   tools/test.sh                 the suite three times: plain, ASan+UBSan, TSan;
#                                 the layout check (tools/format_check.sh);
#                                 no function over 60 lines in library,
#                                 example, benchmark or tool code
#                                 (tools/function_lengths.py);
#                                 Clang's thread-safety analysis of the locking
#                                 annotations (tools/thread_safety.sh);
#                                 the consumer tests (libnet used from another
#                                 Bazel workspace, installed for CMake and
#                                 pkg-config); the fuzzers (HttpParser, TLS
#                                 input, WebSocket receiver, HTTP/2 session,
#                                 FastCGI records), 30 s each; h2spec, the HTTP/2
#                                 conformance suite, against http_server on
#                                 both backends, h2c and TLS (tools/h2spec.sh)
#   tools/test.sh --config=tsan   one run with the given bazel options
#
# The full run also runs every C++ test once more as on a kernel without
# io_uring (tests/net:without_io_uring, a seccomp filter failing
# io_uring_setup): their io_uring half must skip, naming the reason, and the
# rest must pass.
#
# LIBNET_FUZZ_SECONDS sets the fuzzing time (0 skips it); without clang++
# (tools/setup.sh installs it) the fuzzing is skipped with a notice.
#
# Prints one summary line per run: "tests: N passed, M failed, K skipped;
# targets: T passed, F failed" (the test cases and targets of that run; a
# target that failed without a failed case of its own, a script test or a
# sanitizer report at exit, counts as a failed case too and is named), each
# phase's duration as it ends, and a table of all phases at the end.
#
# Tests tagged "load" (long load and soak tests: wrk, thousands of
# connections, the benchmark scripts) run once, in the plain phase; the
# sanitizer phases and the run without io_uring leave them out. Targets
# tagged "no_sanitizers" (the grpc++ peers of the gRPC interop tests, and
# those tests) are built and run in the plain phase only.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

phase_names=()
phase_times=()
phase_results=()
# phase NAME COMMAND...: runs one phase, prints and records its duration.
phase() {
  local name=$1 began=$SECONDS rc=0
  shift
  echo "== $name" >&2
  "$@" || rc=$?
  local took=$((SECONDS - began))
  phase_names+=("$name")
  phase_times+=("$took")
  phase_results+=("$([[ $rc -eq 0 ]] && echo ok || echo "FAILED ($rc)")")
  printf -- '-- %s: %dm%02ds, %s\n' "$name" $((took / 60)) $((took % 60)) "${phase_results[-1]}" >&2
  return $rc
}

# bazel_test OUTPUT_FILE QUERY BAZEL_ARGUMENT...: `bazel test` with the
# arguments given, its output kept for the summary of the tests QUERY names.
bazel_test() {
  local out=$1 query=$2 status=0 labels
  shift 2
  bazel test "$@" 2>&1 | tee "$out" || status=$?
  labels=$(bazel query "$query" 2>/dev/null)
  # shellcheck disable=SC2086  # one label per word
  python3 tools/test_summary.py "$out" $labels
  return $status
}

log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
no_load=--test_tag_filters=-load
# The sanitizer phases also leave out what is tagged no_sanitizers (the grpc++
# peers, uninstrumented and slow to compile, and the tests that run them):
# neither built nor run.
sanitized=(--build_tag_filters=-no_sanitizers --test_tag_filters=-load,-no_sanitizers)

status=0
if (($# > 0)); then
  phase "bazel test $*" bazel_test "$log_dir/run.log" 'tests(//...)' "$@" //... || status=$?
else
  # Every phase runs even after one fails, so one report shows all.
  phase "bazel test (plain)" bazel_test "$log_dir/plain.log" 'tests(//...)' //... || status=$?
  cc_tests=$(bazel query 'kind(cc_test, //...)' 2>/dev/null)
  # shellcheck disable=SC2086  # one label per word
  phase "bazel test C++ tests without io_uring" bazel_test "$log_dir/no_uring.log" \
    'kind(cc_test, //...)' --run_under=//tests/net:without_io_uring "$no_load" $cc_tests ||
    status=$?
  phase "bazel test --config=asan" bazel_test "$log_dir/asan.log" 'tests(//...) except attr(tags, no_sanitizers, //...)' \
    --config=asan "${sanitized[@]}" //... || status=$?
  phase "bazel test --config=tsan" bazel_test "$log_dir/tsan.log" 'tests(//...) except attr(tags, no_sanitizers, //...)' \
    --config=tsan "${sanitized[@]}" //... || status=$?
  phase "tools/format_check.sh" tools/format_check.sh || status=$?
  phase "tools/function_lengths.py" \
    python3 tools/function_lengths.py base net examples bench pingpong tools || status=$?
  phase "tools/thread_safety.sh" tools/thread_safety.sh || status=$?
  # Built and run from outside the repository, as an application would:
  # another Bazel workspace, an installed tree found by CMake, pkg-config.
  for consumer_test in tests/consumers/bazel_consumer_test.sh \
                       tests/consumers/cmake_consumer_test.sh \
                       tests/consumers/pkgconfig_consumer_test.sh \
                       tests/consumers/install_staging_test.sh; do
    phase "$consumer_test" "$consumer_test" || status=$?
  done
  fuzz_seconds=${LIBNET_FUZZ_SECONDS:-30}
  if ((fuzz_seconds > 0)); then
    if command -v "${CLANG_CXX:-clang++}" >/dev/null 2>&1; then
      phase "tools/fuzz.sh $fuzz_seconds" tools/fuzz.sh "$fuzz_seconds" || status=$?
    else
      echo "== fuzzing skipped: no clang++ (tools/setup.sh installs it)" >&2
    fi
  fi
  phase "tools/h2spec.sh" tools/h2spec.sh || status=$?
fi

echo "== phases" >&2
total=0
for i in "${!phase_names[@]}"; do
  printf '%6ds  %-48s %s\n' "${phase_times[$i]}" "${phase_names[$i]}" "${phase_results[$i]}" >&2
  total=$((total + phase_times[i]))
done
printf '%6ds  %s\n' "$total" "in all" >&2
exit $status
