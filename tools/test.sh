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
#                                 input, WebSocket receiver, HTTP/2 session),
#                                 a minute each; h2spec, the HTTP/2
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
# Prints one summary line per run: "tests: N passed, M failed, K skipped" (the
# test cases of that run's targets).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

# Counts the test cases of the given test labels (their test.xml from the
# run just made): each phase reports its own cases, not the whole tree's.
summarize() {
  local passed=0 failed=0 skipped=0 tests failures errors skips header label xml
  for label in "$@"; do
    xml="bazel-testlogs/$(sed -n 's|^//\([^:]*\):\(.*\)$|\1/\2|p' <<<"$label")/test.xml"
    [[ -f "$xml" ]] || continue
    header=$(grep -m1 -o '<testsuites [^>]*>' "$xml" || true)
    [[ -z "$header" ]] && continue
    tests=$(sed -n 's/.* tests="\([0-9]*\)".*/\1/p' <<<"$header")
    failures=$(sed -n 's/.* failures="\([0-9]*\)".*/\1/p' <<<"$header")
    errors=$(sed -n 's/.* errors="\([0-9]*\)".*/\1/p' <<<"$header")
    # GoogleTest counts a skipped case among its tests; reported apart.
    skips=$(grep -c '<skipped' "$xml" || true)
    failed=$((failed + ${failures:-0} + ${errors:-0}))
    skipped=$((skipped + ${skips:-0}))
    passed=$((passed + ${tests:-0} - ${failures:-0} - ${errors:-0} - ${skips:-0}))
  done
  echo "tests: ${passed} passed, ${failed} failed, ${skipped} skipped"
}

run() {
  echo "== bazel test $* //..." >&2
  local status=0
  bazel test "$@" //... || status=$?
  # shellcheck disable=SC2046  # one label per word
  summarize $(bazel query 'tests(//...)' 2>/dev/null)
  return $status
}

status=0
if (($# > 0)); then
  run "$@" || status=$?
else
  # Every configuration runs even after one fails, so one report shows all.
  run || status=$?
  echo "== bazel test C++ tests without io_uring" >&2
  cc_tests=$(bazel query 'kind(cc_test, //...)' 2>/dev/null)
  # shellcheck disable=SC2086  # one label per word
  bazel test --run_under=//tests/net:without_io_uring $cc_tests || status=$?
  # shellcheck disable=SC2086
  summarize $cc_tests
  run --config=asan || status=$?
  run --config=tsan || status=$?
  echo "== tools/format_check.sh" >&2
  tools/format_check.sh || status=$?
  echo "== tools/function_lengths.py" >&2
  python3 tools/function_lengths.py base net examples bench pingpong tools || status=$?
  echo "== tools/thread_safety.sh" >&2
  tools/thread_safety.sh || status=$?
  # Built and run from outside the repository, as an application would:
  # another Bazel workspace, an installed tree found by CMake, pkg-config.
  for consumer_test in tests/consumers/bazel_consumer_test.sh \
                       tests/consumers/cmake_consumer_test.sh \
                       tests/consumers/pkgconfig_consumer_test.sh \
                       tests/consumers/install_staging_test.sh; do
    echo "== $consumer_test" >&2
    "$consumer_test" || status=$?
  done
  fuzz_seconds=${LIBNET_FUZZ_SECONDS:-60}
  if ((fuzz_seconds > 0)); then
    if command -v "${CLANG_CXX:-clang++}" >/dev/null 2>&1; then
      echo "== tools/fuzz.sh $fuzz_seconds" >&2
      tools/fuzz.sh "$fuzz_seconds" || status=$?
    else
      echo "== fuzzing skipped: no clang++ (tools/setup.sh installs it)" >&2
    fi
  fi
  echo "== tools/h2spec.sh" >&2
  tools/h2spec.sh || status=$?
fi
exit $status
