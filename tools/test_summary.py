#!/usr/bin/env python3
"""One summary line for a `bazel test` run: its test cases and its targets.

    tools/test_summary.py BAZEL_OUTPUT LABEL...

Reads each label's test.xml under bazel-testlogs/ (GoogleTest's own, or the
one Bazel writes for a test that has none, a script test) and the status
lines Bazel printed (BAZEL_OUTPUT, the run's saved output), and prints

    tests: N passed, M failed, K skipped; targets: T passed, F failed

A target counts as failed when Bazel said so (FAILED, TIMEOUT, NO STATUS,
INCOMPLETE, FAILED TO BUILD), whatever its cases said: a script test has no
cases of its own, and a GoogleTest binary may pass every case and still fail
(a sanitizer report at exit). Such a target's failure is counted once among
the failed cases too, and its label is printed, so that "0 failed" is never
printed for a run that failed. Labels Bazel did not run (filtered out by a
tag, say) are left out.
"""

import os
import re
import sys
import xml.etree.ElementTree as ET

STATUS = re.compile(
    r"^(//\S+)\s+(?:\(cached\)\s+)?"
    r"(PASSED|FAILED TO BUILD|FAILED|TIMEOUT|FLAKY|NO STATUS|INCOMPLETE|SKIPPED)\b")


def statuses(output_path):
    """Label -> status word, from Bazel's printed summary."""
    result = {}
    with open(output_path, errors="replace") as f:
        for line in f:
            m = STATUS.match(line.strip())
            if m:
                result[m.group(1)] = m.group(2)
    return result


def xml_path(label):
    package, _, name = label[2:].partition(":")
    return os.path.join("bazel-testlogs", package, name, "test.xml")


def count_cases(path):
    """(passed, failed, skipped) of one test.xml; zeros when unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return 0, 0, 0
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("result") == "skipped":
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    seen = statuses(argv[1])
    passed = failed = skipped = 0
    targets_passed = 0
    targets_failed = []
    for label in argv[2:]:
        status = seen.get(label)
        if status is None or status == "SKIPPED":
            continue
        p, f, s = count_cases(xml_path(label))
        passed, failed, skipped = passed + p, failed + f, skipped + s
        if status in ("PASSED", "FLAKY"):
            targets_passed += 1
            continue
        targets_failed.append(label)
        if f == 0:
            failed += 1  # failed with no failed case of its own
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped; "
          f"targets: {targets_passed} passed, {len(targets_failed)} failed")
    for label in targets_failed:
        print(f"  failed: {label} ({seen[label]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
