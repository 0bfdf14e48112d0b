#include "net/coro/Serve.h"

#include "net/coro/DrainToken.h"

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Detached.h"
#include "net/coro/StreamState.h"

namespace libnet::coro {

namespace {

// The root of one connection's task. `conn` is kept to close it if the task
// throws (the task itself may have moved its Stream anywhere).
detail::Detached runConnection(Task<> task, TcpConnectionPtr conn) {
  Task<> local = std::move(task);
  // Not callGuarded(): the co_await must stay in this coroutine's own frame.
  try {
    co_await std::move(local);
  } catch (const std::exception& e) {
    LOG_ERROR << conn->name() << ": connection coroutine threw: " << e.what()
              << "; closing the connection";
    conn->forceClose();
  } catch (...) {
    LOG_ERROR << conn->name() << ": connection coroutine threw a non-standard exception"
              << "; closing the connection";
    conn->forceClose();
  }
}

// What serve() keeps for its connections.
struct Served {
  ConnectionHandler handler;
  StreamOptions options;
};

// A connection handler, as a log line names it when it throws.
struct HandlerOf {
  const std::string& connection;
};

LogStream& operator<<(LogStream& stream, const HandlerOf& handler) {
  return stream << "connection handler of " << handler.connection << " (closing the connection)";
}

void startConnection(const Served& served, const TcpConnectionPtr& conn) {
  Task<> task;
  Stream stream(conn, served.options);
  TaskContext* context = static_cast<StreamState*>(conn->attachment())->taskContext();
  if (!callGuarded(HandlerOf{conn->name()}, [&] { task = served.handler(std::move(stream)); })) {
    conn->forceClose();
    return;
  }
  // The root keeps `conn`, and so the context in its StreamState, until the
  // root's frame is gone.
  detail::Detached root = runConnection(std::move(task), conn);
  root.handle.promise().useContext(context);
  detail::startDetached(conn->loop(), root);
}

}  // namespace

std::stop_token drainToken(const Stream& stream) {
  if (!stream) return {};
  auto* state = static_cast<StreamState*>(stream.connection()->attachment());
  return state != nullptr ? state->drainToken() : std::stop_token();
}

void serve(TcpServer& server, ConnectionHandler handler, const StreamOptions& options) {
  EventLoop* loop = server.loop();
  loop->assertInLoopThread();
  // Every connection copies the server's callbacks: a plain pointer copies
  // without allocating. The handler must outlive every connection's "up"
  // callback, which runs while the server exists; the server's loop outlives
  // the server.
  auto* kept = new Served{std::move(handler), options};
  loop->runOnDestroy([kept] { delete kept; });
  server.setConnectionCallback([kept](const TcpConnectionPtr& conn) {
    if (conn->connected()) startConnection(*kept, conn);
    // Down: the connection's StreamState ends whatever is pending.
  });
  server.setMessageCallback(defaultMessageCallback);  // replaced per connection
  // A drain asks each connection's coroutine to stop (drainToken());
  // one that does not is closed at the drain's deadline.
  server.setDrainCallback([](const TcpConnectionPtr& conn) {
    if (auto* state = static_cast<StreamState*>(conn->attachment())) {
      state->requestDrain();
    }
  });
}

}  // namespace libnet::coro
