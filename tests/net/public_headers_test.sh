#!/usr/bin/env bash
# The headers an application includes show the API only: none of them brings
# in, directly or through another, a header of the library's machinery (the
# I/O strategies and their queue, the pollers and backends, the connection's
# backend-facing half, the idle wheel, the coroutine stream state), and
# net/TcpConnection.h with all it includes stays within 600 lines
# (tools/header_lines.py counts them).
set -euo pipefail
cd "${TEST_SRCDIR}/libnet"

public=(net/TcpConnection.h net/TcpServer.h net/TcpClient.h net/EventLoop.h
  net/coro/Coro.h net/http/HttpServer.h net/udp/UdpSocket.h net/udp/CoroUdp.h)
machinery='^(net/(DatagramIo|ConnectionIo|OutputQueue|Poller|BufferPool|TimingWheel|AcceptorIo|Acceptor|ConnectionInput|ConnectionSocket|TcpConnectionImpl)\.h|net/poller/.*|net/coro/(StreamState|TaskContext)\.h)$'

status=0
for header in "${public[@]}"; do
  included=$(python3 tools/header_lines.py "$header" | awk 'NR > 1 { print $2 }')
  if bad=$(echo "$included" | grep -E "$machinery"); then
    echo "$header brings in the library's machinery: $(echo $bad)"
    status=1
  fi
  # A header missing from this test's data would be skipped, unseen.
  for h in $included; do
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$h"); do
      [[ -e "$inc" ]] || { echo "$h includes $inc, which is not in this test's data"; status=1; }
    done
  done
done
python3 tools/header_lines.py net/TcpConnection.h 600 | head -1 || status=1
exit "$status"
