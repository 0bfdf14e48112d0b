// Ping-pong client on Boost.Asio 1.74. Connects every session first, then
// starts the clock and sends one block on each; every session echoes what it
// receives until the time is up, and one RESULT line reports the bytes read.
//
// usage: asio_pingpong_client <address> <port> <threads> <blocksize> <sessions> <time_seconds>
#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <vector>

#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/PingSession.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// What one thread owns: its sessions, its counters and its stop timer. Only
// that thread touches it between run() starting and returning.
struct ThreadState {
  explicit ThreadState(boost::asio::io_context& context) : timer(context) {}
  std::vector<std::shared_ptr<pingpong::PingSession>> sessions;
  pingpong::SessionStats stats;
  boost::asio::steady_timer timer;
  Clock::time_point end;
};

}  // namespace

int main(int argc, char** argv) {
  const pingpong::ClientArgs args = pingpong::parseClientArgs(argc, argv, {"asio_pingpong_client"});
  pingpong::IoContextPool pool(args.threads, /*keepAlive=*/false);
  std::vector<std::unique_ptr<ThreadState>> threads;
  for (int t = 0; t < args.threads; ++t) {
    threads.push_back(std::make_unique<ThreadState>(pool.context(t)));
  }

  // SIGINT/SIGTERM end the run early, as the deadline would: each thread's
  // timer is cancelled, and its handler stops the sessions and the context.
  // Installed before the connections are made, so a signal then does not
  // kill the process either: it is taken once run() starts, and the cancel
  // it posts lands after each context's start handler, posted before run().
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
    auto session =
        std::make_shared<pingpong::PingSession>(pool.context(t), threads[t]->stats, args.blocksize);
    try {
      session->connect(endpoint);
    } catch (const boost::system::system_error& e) {
      if (e.code() == boost::asio::error::interrupted) {
        // Only SIGINT/SIGTERM have a handler (the signal_set's), and asio
        // installs it without SA_RESTART: one of them came mid-connect.
        std::fprintf(stderr, "asio_pingpong_client: interrupted while connecting, no result\n");
        return 0;
      }
      std::fprintf(stderr, "asio_pingpong_client: connect %d to %s failed: %s\n", i,
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
    ThreadState* state = threads[t].get();
    boost::asio::io_context* context = &pool.context(t);
    boost::asio::post(*context, [state, context, deadline] {
      for (auto& session : state->sessions) session->start();
      state->timer.expires_at(deadline);
      state->timer.async_wait([state, context](boost::system::error_code) {
        state->end = Clock::now();
        for (auto& session : state->sessions) session->stop();
        // Closing made every pending handler an operation_aborted one; no
        // need to run them, they count nothing.
        context->stop();
      });
    });
  }
  pool.run();
  std::printf("STOP\n");
  std::fflush(stdout);

  int64_t bytes = 0;
  int64_t messages = 0;
  Clock::time_point end = start;
  for (const auto& state : threads) {
    if (!state->stats.error.empty()) {
      std::fprintf(stderr, "asio_pingpong_client: a connection failed: %s\n",
                   state->stats.error.c_str());
      return pingpong::kExitFailure;
    }
    bytes += state->stats.bytes;
    messages += state->stats.messages;
    end = std::max(end, state->end);
  }
  std::printf("%s\n", pingpong::formatResult("asio", args, bytes, messages, end - start).c_str());
  return 0;
}
