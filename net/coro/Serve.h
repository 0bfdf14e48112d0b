// serve(): a TcpServer that runs one coroutine per accepted connection.
//
//   coro::serve(server, [](coro::Stream stream) -> coro::Task<> { ... });
//   server.start();
//
// For every connection the server accepts, `handler` is called on the
// connection's loop with a Stream of it, and the task it returns runs there
// as a detached task (net/coro/Spawn.h). When the task ends the Stream goes
// and the connection closes once its output is written. An exception that
// escapes the task is logged at ERROR with the connection's name and closes
// that connection only (queued output dropped); the server and its other
// connections go on. When the server is destroyed its connections close, so
// every pending operation of their coroutines ends with Errc::kClosed.
//
// Every Stream is bounded by `options`. Call before server.start(), on the
// server's loop thread; it takes over the server's connection, message and
// drain callbacks (net/coro/DrainToken.h). The handler is kept until the server's loop is gone.
#pragma once

#include <functional>

#include "net/coro/Stream.h"
#include "net/coro/StreamOptions.h"
#include "net/coro/Task.h"

namespace libnet {
class TcpServer;
}

namespace libnet::coro {

using ConnectionHandler = std::function<Task<>(Stream)>;

void serve(TcpServer& server, ConnectionHandler handler, const StreamOptions& options = {});

}  // namespace libnet::coro
