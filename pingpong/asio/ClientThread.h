// ClientThread<Session>: what one thread of an asio ping-pong client owns:
// its sessions, its counters, the timer that ends its part of the run, and
// the time it ended. A client may derive from it to add its own per-thread
// state (the TLS client's handshake bookkeeping).
//
// PingClient makes one per io_context, on the main thread, before the
// contexts run; only the thread running that context touches it between
// run() starting and returning, and the main thread reads it afterwards.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <vector>

#include "pingpong/asio/SessionStats.h"

namespace pingpong {

template <typename Session>
struct ClientThread {
  explicit ClientThread(boost::asio::io_context& context) : timer(context) {}

  std::vector<std::shared_ptr<Session>> sessions;
  SessionStats stats;
  boost::asio::steady_timer timer;  // fires at the deadline; a signal cancels it
  std::chrono::steady_clock::time_point end;
};

}  // namespace pingpong
