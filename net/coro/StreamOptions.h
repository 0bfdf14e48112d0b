// StreamOptions: how a coroutine Stream bounds what it holds for its
// connection, given where streams are made: serve(), connect(), or the
// Stream(conn, options) constructor. The output side has no option of its
// own: a write suspends on the connection's own limit,
// TcpConnection::maxQueuedOutput() (see Stream.h).
#pragma once

#include <cstddef>

namespace libnet::coro {

struct StreamOptions {
  // Unread input beyond which the stream stops reading from the socket
  // while no read is pending (TCP then holds the peer back); also the
  // default limit of readUntil().
  size_t maxInput = 1024 * 1024;
  // Files (sendFile()) queued on the connection at which a write suspends
  // its coroutine until the output has drained: each holds an fd until it
  // is sent, and a pipelining client could otherwise have one opened per
  // request. As many as HttpServer can have queued per connection (it reads
  // files up to 64 KiB into memory and pauses at 1 MiB of queued output).
  // 0 counts as 1.
  size_t maxQueuedFiles = 16;
};

}  // namespace libnet::coro
