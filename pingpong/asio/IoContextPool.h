// A fixed set of io_contexts, one per thread, handed out round-robin: the
// design asio's documentation recommends for scaling (an io_context per core,
// no handler ever contended between threads). The book's asio ping-pong test
// instead ran one io_service shared by all threads; that design funnels every
// completion through one scheduler and its mutex, so it is not used here.
//
// Context 0 runs on the thread that calls run(), so one thread means exactly
// one thread. Construct, post work, and call run() from the main thread;
// stop() may be called from any thread or handler.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

namespace pingpong {

class IoContextPool {
 public:
  // `keepAlive`: hold a work guard on every context so that run() does not
  // return while idle (a server waiting for connections); a client that
  // always has work in flight passes false and its contexts return once
  // their sockets are closed.
  IoContextPool(int threads, bool keepAlive);
  IoContextPool(const IoContextPool&) = delete;
  IoContextPool& operator=(const IoContextPool&) = delete;

  [[nodiscard]] int size() const { return static_cast<int>(contexts_.size()); }
  [[nodiscard]] boost::asio::io_context& context(int i) { return *contexts_[i]; }
  // The next context in round-robin order. Called from one thread only (the
  // acceptor's or the main thread).
  [[nodiscard]] boost::asio::io_context& next();

  // Runs every context, each on its own thread, until all of them return.
  void run();
  void stop();

 private:
  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;

  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::vector<std::optional<WorkGuard>> guards_;
  size_t next_ = 0;
};

}  // namespace pingpong
