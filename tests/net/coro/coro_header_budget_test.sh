#!/usr/bin/env bash
# The coroutine layer's public surface stays small: net/coro/Coro.h, with
# every project header it brings in, is at most 1000 lines
# (tools/header_lines.py). A header it includes that is missing from this
# test's data would go uncounted, so that fails too.
set -euo pipefail
cd "${TEST_SRCDIR}/libnet"
status=0
out=$(python3 tools/header_lines.py net/coro/Coro.h 1000) || status=$?
echo "$out"
for header in $(echo "$out" | awk 'NR > 1 { print $2 }'); do
  for included in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' \
    "$header"); do
    if [[ ! -e "$included" ]]; then
      echo "$header includes $included, which is not in the data of this test"
      status=1
    fi
  done
done
exit "$status"
