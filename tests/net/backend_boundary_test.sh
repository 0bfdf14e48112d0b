#!/usr/bin/env bash
# The backend boundary: io_uring and epoll live in net/poller/ alone. No file
# of net/ outside it (net/*, net/http/*, net/udp/*) includes liburing or a net/poller/
# header, names UringPoller or EpollPoller, or calls liburing (io_uring_*);
# the one exception is EventLoop.cc including the factory's header
# (net/poller/PollerFactory.h), which itself names no backend. TcpConnection,
# Acceptor and EventLoop carry no backend branch (uring_, uring(), epoll_ or
# EPOLL* flags). As a control, the same patterns are found in net/poller/, so
# the test is looking at the real files.
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

root=""
for dir in "${TEST_SRCDIR:-}/libnet" "${RUNFILES_DIR:-}/libnet" "$0.runfiles/libnet"; do
  if [[ -f "$dir/net/TcpConnection.cc" ]]; then
    root=$dir
    break
  fi
done
[[ -n $root ]] || fail "net/ sources not found in the runfiles"

shopt -s nullglob
outside=("$root"/net/*.h "$root"/net/*.cc "$root"/net/http/*.h "$root"/net/http/*.cc
  "$root"/net/udp/*.h "$root"/net/udp/*.cc)
inside=("$root"/net/poller/*.h "$root"/net/poller/*.cc)
((${#outside[@]} > 20)) || fail "only ${#outside[@]} files found under net/"
((${#inside[@]} > 5)) || fail "only ${#inside[@]} files found under net/poller/"

readonly BACKEND='liburing\.h|#include "net/poller/|UringPoller|EpollPoller|\bio_uring_[a-z_]+\('
readonly FACTORY='#include "net/poller/PollerFactory.h"'
if found=$(grep -nE "$BACKEND" "${outside[@]}" | sed "s|^$root/||" |
           grep -vE '^net/EventLoop\.cc:[0-9]+:#include "net/poller/PollerFactory\.h"$'); then
  fail "backend names outside net/poller/:
$found"
fi
grep -qF "$FACTORY" "$root/net/EventLoop.cc" || fail "net/EventLoop.cc no longer includes the factory"
if found=$(grep -nE 'liburing\.h|UringPoller|EpollPoller|\bio_uring_[a-z_]+\(' "$root/net/poller/PollerFactory.h"); then
  fail "the factory's header names a backend:
$found"
fi
for f in Acceptor.cc Acceptor.h EventLoop.cc EventLoop.h TcpConnection.cc TcpConnection.h \
  udp/UdpSocket.cc udp/UdpSocket.h; do
  if found=$(grep -nE '\buring_\b|uring\(\)|\bepoll_|EPOLL[A-Z]+' "$root/net/$f"); then
    fail "a backend branch in net/$f:
$found"
  fi
done

# The control.
for pattern in 'liburing\.h' 'UringPoller' 'EpollPoller' '\bio_uring_[a-z_]+\('; do
  grep -qE "$pattern" "${inside[@]}" || fail "'$pattern' not found in net/poller/ either"
done
echo "ok: ${#outside[@]} files outside net/poller/ name no backend"
