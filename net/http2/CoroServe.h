// http2::serveConnection(): one HTTP/2 connection served by a coroutine
// (net/coro/), the coroutine twin of the callback glue (Http2Server.cc): the
// same ServerSession, answering with the same handler, under the same
// deadlines. The configuration's asyncHandler and router are honoured as
// HttpServer's HTTP/2 front end honours them (answers that come later,
// request bodies in pieces): a writer reaches the connection through
// config.gate, or, when that is null, through a gate of the connection's
// own that closes when this task ends; what a writer queues (from any
// thread) wakes the task out of its wait on input.
//
//   coro::serve(server, [&](coro::Stream stream) -> coro::Task<> {
//     // ... the caller has read the client preface (or chose h2 by ALPN)
//     co_await http2::serveConnection(stream, config, 10s, 60s);
//   });
//
// What the stream has read and not consumed (the preface the caller looked
// at) is fed to the session first. Then the coroutine reads, feeds the
// session, and writes what it produces, at most kWriteBudget bytes a write:
// a client that does not read holds the coroutine in its write once the
// connection's output limit (TcpConnection::maxQueuedOutput(); set it with
// TcpServer::Options::maxQueuedOutput, HttpServer uses 1 MiB) is reached,
// so a connection holds at most that limit plus one write of answers, and
// its unread input is bounded by the stream's StreamOptions::maxInput.
//
// Deadlines:
// - headerTimeout: the client preface (and its first SETTINGS), and every
//   header block once begun, must be complete within it; else GOAWAY
//   (NO_ERROR) and the connection ends.
// - idleTimeout (zero: off): while answers are pending, a connection that
//   has sent fewer response bytes than the session's minimum rate asks over
//   a window this long (ServerSession::progressNeeded(): a client that keeps
//   its window shut, opens it a byte at a time, or never reads) gets GOAWAY
//   if its output has room and is closed. PINGs and other control frames do
//   not count as progress.
//
// Graceful close: once `stop` is requested (any thread), the connection gets
// GOAWAY (NO_ERROR) naming the last stream it took; those streams are
// answered, then it ends. A connection served after the request gets it at
// once.
//
// Returns once the session is finished (GOAWAY either way and its streams
// done), the peer has gone, a defence tripped (after writing the GOAWAY
// that says why) or a deadline passed. Ending, it half-closes and waits for
// the client's close, at most headerTimeout, then closes. `config` must
// outlive the task. Loop thread of the stream's connection.
#pragma once

#include <cstddef>
#include <stop_token>

#include "base/Duration.h"
#include "net/coro/Stream.h"
#include "net/coro/Task.h"
#include "net/http2/ServerSession.h"

namespace libnet::http2 {

// The most bytes of frames produced for one write (it may pass it by one
// frame): under BufferStorage's mmap threshold, so that the connection's
// frame buffer is reused from the heap rather than mapped for every write.
inline constexpr size_t kWriteBudget = 64 * 1024;

[[nodiscard]] coro::Task<> serveConnection(coro::Stream& stream,
                                           const ServerSession::Config& config,
                                           Duration headerTimeout, Duration idleTimeout,
                                           std::stop_token stop = {});

}  // namespace libnet::http2
