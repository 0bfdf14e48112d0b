#!/usr/bin/env python3
"""Counts the cases of one h2spec run from its JUnit report (h2spec -j FILE):

  tools/h2spec/junit_summary.py REPORT

prints "N tests, P passed, S skipped, F failed", then for each failed case a
line "FAILED ID DESCRIPTION" (ID as h2spec's own numbering: http2/4.2/2, the
argument that reruns only that case) and what h2spec expected and saw.
Exits 0 when no case failed, 1 when one did, 2 when the report is unreadable.

h2spec 2.2.1 files a case that got the wrong frame under <error>, not
<failure> (a type switch of its reporter misses its own error type), so both
count as failed. A suite lists its cases in h2spec's order, the strict-only
cases (not run without -S) absent from the end, so a case's position in its
suite is its number.
"""

import sys
import xml.etree.ElementTree as ET


def failure_detail(case):
    """(expected lines, actual) of a failed case, or None if it passed."""
    for tag in ("failure", "error"):
        node = case.find(tag)
        if node is not None:
            lines = (node.text or "").strip().splitlines()
            lines = [l for l in lines if l not in ("Expect:", "Actual:")]
            if not lines:
                return ([], "(no detail)")
            return (lines[:-1], lines[-1])
    return None


def summarize(root):
    """Returns (tests, passed, skipped, failures) where failures lists
    (id, description, expected lines, actual)."""
    tests = passed = skipped = 0
    failures = []
    for suite in root.iter("testsuite"):
        package = suite.get("package", "?")
        for number, case in enumerate(suite.findall("testcase"), start=1):
            tests += 1
            detail = failure_detail(case)
            if detail is not None:
                failures.append(("%s/%d" % (package, number), case.get("classname", ""),
                                 detail[0], detail[1]))
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    return tests, passed, skipped, failures


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: junit_summary.py REPORT")
    try:
        root = ET.parse(sys.argv[1]).getroot()
    except (OSError, ET.ParseError) as e:
        print("unreadable JUnit report %s: %s" % (sys.argv[1], e))
        return 2
    tests, passed, skipped, failures = summarize(root)
    print("%d tests, %d passed, %d skipped, %d failed" % (tests, passed, skipped, len(failures)))
    for case_id, description, expected, actual in failures:
        print("  FAILED %s %s" % (case_id, description))
        print("    expected: %s" % " | ".join(expected))
        print("    actual:   %s" % actual)
    return 1 if failures or tests == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
