// Ping-pong client on Boost.Asio 1.74 written with C++20 coroutines
// (awaitable, co_spawn, use_awaitable), the coroutine twin of
// asio_pingpong_client. Connects every session first, then starts the clock
// and sends one block on each; every session echoes what it receives until
// the time is up, and one RESULT line reports the bytes read.
//
// usage: asio_coro_pingpong_client <address> <port> <threads> <blocksize> <sessions> <time_seconds>

// Boost 1.74's awaitable.hpp calls std::exchange without including <utility>;
// it must come first.
#include <utility>

#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "pingpong/asio/ClientThread.h"
#include "pingpong/asio/PingClient.h"
#include "pingpong/asio/SessionStats.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::awaitable;
using boost::asio::redirect_error;
using boost::asio::use_awaitable;
using boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr const char* kProgram = "asio_coro_pingpong_client";

// As in PingSession: at least 64 KiB (the most loopback TCP delivers per
// segment) so that one read takes everything available when a message comes
// in pieces or two come together; messages are unframed, so a larger buffer
// changes only the number of reads.
constexpr size_t kMinBufferSize = 64 * 1024;

// One connection. Owned by its thread's list, which outlives the coroutine
// driving it: the frame holds only a reference.
struct Session {
  Session(boost::asio::io_context& context, size_t blocksize)
      : socket(context), buffer(std::max(blocksize, kMinBufferSize)) {
    for (size_t i = 0; i < blocksize; ++i) buffer[i] = static_cast<char>(i % 128);
  }

  // Blocking connect, done before the clock starts; throws
  // boost::system::system_error.
  void connect(const tcp::endpoint& endpoint) {
    socket.connect(endpoint);
    socket.set_option(tcp::no_delay(true));
  }

  // Closes the socket; the pending operation completes with
  // operation_aborted, which `stopped` tells from a peer's error.
  void stop() {
    stopped = true;
    boost::system::error_code ignored;
    socket.close(ignored);
  }

  tcp::socket socket;
  std::vector<char> buffer;
  bool stopped = false;
};

using ThreadState = pingpong::ClientThread<Session>;

// Sends the first block, then echoes what it reads, counting bytes and read
// completions, until stopped or the connection fails. Errors come back as
// codes (redirect_error): at the deadline every session ends with
// operation_aborted, which need not cost a throw each.
awaitable<void> ping(Session& session, pingpong::SessionStats& stats, size_t blocksize) {
  boost::system::error_code ec;
  size_t n = blocksize;
  for (;;) {
    co_await boost::asio::async_write(session.socket, boost::asio::buffer(session.buffer.data(), n),
                                      redirect_error(use_awaitable, ec));
    if (session.stopped) co_return;
    if (ec) break;
    n = co_await session.socket.async_read_some(boost::asio::buffer(session.buffer),
                                                redirect_error(use_awaitable, ec));
    if (session.stopped) co_return;
    if (ec) break;
    stats.bytes += static_cast<int64_t>(n);
    ++stats.messages;
  }
  if (stats.error.empty()) stats.error = ec.message();
  session.stop();
}

// One per thread: starts the thread's sessions and stops them at the deadline
// (or when a signal cancels the timer).
awaitable<void> drive(ThreadState& state, boost::asio::io_context& context, size_t blocksize,
                      Clock::time_point deadline) {
  for (auto& session : state.sessions) {
    boost::asio::co_spawn(context, ping(*session, state.stats, blocksize), boost::asio::detached);
  }
  state.timer.expires_at(deadline);
  boost::system::error_code ec;
  co_await state.timer.async_wait(redirect_error(use_awaitable, ec));
  state.end = Clock::now();
  for (auto& session : state.sessions) session->stop();
  // Closing made every pending read or write complete with operation_aborted;
  // no need to resume the sessions for that, they count nothing. Their frames
  // are destroyed with the context.
  context.stop();
}

}  // namespace

int main(int argc, char** argv) {
  const pingpong::ClientArgs args = pingpong::parseClientArgs(argc, argv, {kProgram});
  // A signal in the window cancels each thread's timer, and its driver then
  // stops the sessions and the context; the cancel lands after each driver
  // has started, spawned before the pool runs.
  pingpong::PingClient<ThreadState> client(kProgram, args);
  if (auto status = client.connectAll(
          [&](int t) { return std::make_shared<Session>(client.context(t), args.blocksize); })) {
    return *status;
  }
  return client.runTimed("asio-coro", [&](ThreadState& state, boost::asio::io_context& context,
                                          Clock::time_point deadline) {
    boost::asio::co_spawn(context, drive(state, context, args.blocksize, deadline),
                          boost::asio::detached);
  });
}
