#!/usr/bin/env bash
# tools/test_summary.py counts cases from test.xml files and targets from
# Bazel's status lines; a failed target is never summarized as "0 failed".
set -euo pipefail

tool=$(pwd)/tools/test_summary.py
work=${TEST_TMPDIR:-$(mktemp -d)}/summary
mkdir -p "$work"
cd "$work"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# xml PACKAGE NAME CONTENT: a test.xml where Bazel keeps it.
xml() {
  mkdir -p "bazel-testlogs/$1/$2"
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>%s</testsuites>\n' "$3" \
    >"bazel-testlogs/$1/$2/test.xml"
}
pass='<testcase name="a" status="run"/>'
# GoogleTest: two cases passed, one skipped; the binary failed at exit.
xml t gtest_leak "<testsuite tests=\"3\">$pass$pass<testcase name=\"s\" status=\"run\" result=\"skipped\"><skipped/></testcase></testsuite>"
# GoogleTest: one case failed of two.
xml t gtest_fail "<testsuite tests=\"2\">$pass<testcase name=\"f\"><failure message=\"x\"/></testcase></testsuite>"
# A script test as Bazel writes it: one case, an error when it exited non-zero.
xml t script_fail '<testsuite tests="1"><testcase name="t/script_fail"><error message="exited with error code 1"/></testcase></testsuite>'
xml t script_ok "<testsuite tests=\"1\">$pass</testsuite>"
xml t not_run "<testsuite tests=\"5\">$pass$pass$pass$pass$pass</testsuite>"
cat >bazel.out <<'OUT'
INFO: Build completed, 3 tests FAILED
//t:gtest_leak                                   FAILED in 1.0s
//t:gtest_fail                                   FAILED in 0.5s
//t:script_fail                                  FAILED in 2.0s
//t:script_ok                           (cached) PASSED in 0.1s
OUT

out=$(python3 "$tool" bazel.out //t:gtest_leak //t:gtest_fail //t:script_fail //t:script_ok //t:not_run)
first=$(head -1 <<<"$out")
expected="tests: 4 passed, 3 failed, 1 skipped; targets: 1 passed, 3 failed"
[[ $first == "$expected" ]] || fail "summary: got '$first', expected '$expected'"
for label in //t:gtest_leak //t:gtest_fail //t:script_fail; do
  grep -qF "failed: $label (FAILED)" <<<"$out" || fail "$label not named as failed: $out"
done
grep -qF "//t:script_ok" <<<"$out" && fail "a passed target is named: $out"

# All passed: nothing failed, nothing named.
out=$(python3 "$tool" bazel.out //t:script_ok)
[[ $out == "tests: 1 passed, 0 failed, 0 skipped; targets: 1 passed, 0 failed" ]] ||
  fail "all passed: got '$out'"

if ((failures)); then
  exit 1
fi
echo "ok: test_summary"
