#!/usr/bin/env bash
# The suite on a kernel without io_uring: without_io_uring (a seccomp filter
# that fails io_uring_setup with ENOSYS) really takes io_uring away, the
# probe says so, kAuto falls back to epoll, an explicit io_uring loop fails
# with the probe's reason, and a test binary instantiated for both backends
# skips its io_uring half with that reason while its epoll half passes.
# tools/test.sh also runs every C++ test under the filter once.
set -euo pipefail
source "$(dirname "$0")/test_lib.sh"

wrapper=$(runfile tests/net/without_io_uring)
probe=$(runfile tests/net/poller/poller_probe_main)
suite=$(runfile tests/net/TcpServerTest)
unset LIBNET_POLLER

# Control: without the filter io_uring runs here, or this test proves nothing.
out=$("$probe" uring 2>/dev/null) || true
if [[ "$out" != "backend=uring" ]]; then
  echo "io_uring does not run on this machine even without the filter; nothing to compare" >&2
  exit 0
fi

out=$("$wrapper" "$probe" auto 2>/dev/null) || fail "kAuto under the filter exited $?"
[[ "$out" == "backend=epoll" ]] || fail "kAuto under the filter: '$out', want backend=epoll"

status=0
out=$("$wrapper" "$probe" uring 2>/dev/null) || status=$?
[[ $status -eq 3 ]] || fail "an io_uring loop under the filter exited $status, want 3"
[[ "$out" == error=*"io_uring unavailable"* ]] || fail "an io_uring loop under the filter: '$out'"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$wrapper" "$suite" --gtest_filter='Backends/TcpServerTest.EchoesOneConnectionByteExact/*' \
  >"$log" 2>&1 || status=$?
[[ $status -eq 0 ]] || { cat "$log" >&2; fail "TcpServerTest under the filter exited $status"; }
grep -q '^\[       OK \] Backends/TcpServerTest.EchoesOneConnectionByteExact/epoll' "$log" ||
  { cat "$log" >&2; fail "the epoll half did not pass"; }
grep -q '^\[  SKIPPED \] Backends/TcpServerTest.EchoesOneConnectionByteExact/uring' "$log" ||
  { cat "$log" >&2; fail "the io_uring half was not skipped"; }
grep -q 'io_uring unavailable' "$log" || { cat "$log" >&2; fail "the skip does not say why"; }
echo "PASS"
