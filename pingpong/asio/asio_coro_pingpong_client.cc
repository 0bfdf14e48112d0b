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
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/PingSession.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::awaitable;
using boost::asio::redirect_error;
using boost::asio::use_awaitable;
using boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

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

// What one thread owns: its sessions, its counters and its stop timer. Only
// that thread touches it between run() starting and returning.
struct ThreadState {
  explicit ThreadState(boost::asio::io_context& context) : timer(context) {}
  std::vector<std::unique_ptr<Session>> sessions;
  pingpong::SessionStats stats;
  boost::asio::steady_timer timer;
  Clock::time_point end;
};

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
  const pingpong::ClientArgs args =
      pingpong::parseClientArgs(argc, argv, {"asio_coro_pingpong_client"});
  pingpong::IoContextPool pool(args.threads, /*keepAlive=*/false);
  std::vector<std::unique_ptr<ThreadState>> threads;
  for (int t = 0; t < args.threads; ++t) {
    threads.push_back(std::make_unique<ThreadState>(pool.context(t)));
  }

  // SIGINT/SIGTERM end the run early, as the deadline would: each thread's
  // timer is cancelled, and its driver then stops the sessions and the
  // context. Installed before the connections are made, so a signal then
  // does not kill the process either: it is taken once run() starts, and the
  // cancel it posts lands after each driver has started, spawned before run().
  boost::asio::signal_set signals(pool.context(0), SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (ec) return;
    for (int t = 0; t < args.threads; ++t) {
      ThreadState* state = threads[t].get();
      boost::asio::post(pool.context(t), [state] { state->timer.cancel(); });
    }
  });

  const tcp::endpoint endpoint(boost::asio::ip::make_address(args.endpoint.address),
                               args.endpoint.port);
  for (int i = 0; i < args.sessions; ++i) {
    const int t = i % args.threads;
    auto session = std::make_unique<Session>(pool.context(t), args.blocksize);
    try {
      session->socket.connect(endpoint);
      session->socket.set_option(tcp::no_delay(true));
    } catch (const boost::system::system_error& e) {
      if (e.code() == boost::asio::error::interrupted) {
        // Only SIGINT/SIGTERM have a handler (the signal_set's), and asio
        // installs it without SA_RESTART: one of them came mid-connect.
        std::fprintf(stderr,
                     "asio_coro_pingpong_client: interrupted while connecting, no result\n");
        return 0;
      }
      std::fprintf(stderr, "asio_coro_pingpong_client: connect %d to %s failed: %s\n", i,
                   pingpong::formatEndpoint(args.endpoint.address, args.endpoint.port).c_str(),
                   e.code().message().c_str());
      return pingpong::kExitFailure;
    }
    threads[t]->sessions.push_back(std::move(session));
  }

  // START/STOP let a runner sample the server's CPU time over the window.
  std::printf("START\n");
  std::fflush(stdout);
  const Clock::time_point start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(args.time);
  for (int t = 0; t < args.threads; ++t) {
    boost::asio::co_spawn(pool.context(t),
                          drive(*threads[t], pool.context(t), args.blocksize, deadline),
                          boost::asio::detached);
  }
  pool.run();
  std::printf("STOP\n");
  std::fflush(stdout);

  int64_t bytes = 0;
  int64_t messages = 0;
  Clock::time_point end = start;
  for (const auto& state : threads) {
    if (!state->stats.error.empty()) {
      std::fprintf(stderr, "asio_coro_pingpong_client: a connection failed: %s\n",
                   state->stats.error.c_str());
      return pingpong::kExitFailure;
    }
    bytes += state->stats.bytes;
    messages += state->stats.messages;
    end = std::max(end, state->end);
  }
  std::printf("%s\n",
              pingpong::formatResult("asio-coro", args, bytes, messages, end - start).c_str());
  return 0;
}
