#!/usr/bin/env bash
# System calls per short connection on each backend (io_uring: none of its
# own; epoll: accept4, epoll_ctl ADD, read, send, shutdown, close); the checks are in
# short_connection_syscalls_test.py.
#
# Needs strace (tools/setup.sh installs it). Without it the test fails, unless
# LIBNET_ALLOW_NO_STRACE is set, in which case it says why and passes.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"
HTTP_SERVER=$(runfile examples/http/http_server)
command -v python3 >/dev/null || fail "python3 is needed (tools/setup.sh installs it)"
if ! command -v strace >/dev/null 2>&1 || ! strace -f -qq -o /dev/null true >/dev/null 2>&1; then
  if [[ -n "${LIBNET_ALLOW_NO_STRACE:-}" ]]; then
    echo "SKIP: strace cannot trace here (LIBNET_ALLOW_NO_STRACE is set)"
    exit 0
  fi
  fail "strace is missing or cannot trace here; install it (tools/setup.sh does) or set LIBNET_ALLOW_NO_STRACE=1 to skip"
fi
exec timeout -k 5 280 python3 "$(dirname "$0")/short_connection_syscalls_test.py" "$HTTP_SERVER"
