#!/usr/bin/env python3
"""Lines of project headers a public header brings in, itself included.

Usage: tools/header_lines.py HEADER [MAX_LINES]...  (from the repository root)

Follows #include "..." transitively (project headers only; system and
third-party headers are not counted) and prints, for each header given, the
total and the headers it pulls in. With MAX_LINES after a header, exits 1 if
the total is larger: the public-surface budget is checked, not hoped for.
"""
import os
import re
import signal
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def closure(header):
    seen, stack = [], [header]
    while stack:
        path = stack.pop()
        if path in seen or not os.path.exists(path):
            continue
        seen.append(path)
        with open(path, encoding="utf-8") as f:
            stack.extend(reversed(INCLUDE.findall(f.read())))
    return seen


def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


def main(argv):
    failed = False
    args = list(argv)
    while args:
        header = args.pop(0)
        limit = int(args.pop(0)) if args and args[0].isdigit() else None
        files = closure(header)
        total = sum(count_lines(p) for p in files)
        verdict = ""
        if limit is not None:
            verdict = " (limit %d: %s)" % (limit, "ok" if total <= limit else "OVER")
            failed |= total > limit
        print("%s: %d lines in %d headers%s" % (header, total, len(files), verdict))
        for path in files:
            print("  %5d %s" % (count_lines(path), path))
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    sys.exit(main(sys.argv[1:]))
