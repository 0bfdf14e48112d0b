// PingClient<Thread>: the frame that every asio ping-pong client (callback,
// coroutine and TLS) runs its sessions in, so that they all connect, take
// signals, time the run and print START, STOP and the RESULT line alike.
// Only making the sessions, and for TLS the handshakes, is left to each.
//
// Owns the IoContextPool (one context per thread, no work guard: a context
// returns once its work is done or it is stopped), one Thread per context (a
// ClientThread<Session>, or a type derived from it), and the SIGINT/SIGTERM
// handler, installed when the PingClient is made, so that a signal during
// the connects does not kill the process either: it is taken once the pool
// runs. Made and driven from the main thread, which also runs context 0 and
// so the signal handler.
#pragma once

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pingpong/asio/IoContextPool.h"
#include "pingpong/floor/PingpongArgs.h"

namespace pingpong {

template <typename Thread>
class PingClient {
 public:
  using Clock = std::chrono::steady_clock;
  // Puts a thread's untimed work on its context (see runUntimed()).
  using Setup = std::function<void(Thread& thread, boost::asio::io_context& context)>;
  // Starts a thread's part of the timed window (see runTimed()).
  using Start = std::function<void(Thread& thread, boost::asio::io_context& context,
                                   Clock::time_point deadline)>;

  // `program` prefixes every message on stderr.
  PingClient(std::string_view program, const ClientArgs& args);
  PingClient(const PingClient&) = delete;
  PingClient& operator=(const PingClient&) = delete;

  [[nodiscard]] Thread& thread(int t) { return *threads_[t]; }
  [[nodiscard]] boost::asio::io_context& context(int t) { return pool_.context(t); }

  // Makes the sessions, the i-th with makeSession(i % threads) (a shared_ptr
  // to anything with connect(endpoint)), connects each (blocking, before the
  // clock starts) and adds it to its thread. Returns the status to exit with
  // when one failed (kExitFailure, after saying which) or a signal came
  // meanwhile (0: no result); nothing when all are connected.
  template <typename MakeSession>
  [[nodiscard]] std::optional<int> connectAll(MakeSession makeSession);

  // An untimed phase before the window (the TLS client's handshakes): calls
  // setup for each thread, whose work must stop the thread's context when it
  // is done, and runs the pool. A signal meanwhile stops the pool, and this
  // returns false: the program then ends without a result.
  [[nodiscard]] bool runUntimed(const Setup& setup);

  // The timed window: prints START, starts the clock, calls start for each
  // thread, runs the pool, prints STOP and then the RESULT line as `impl`.
  // start's work must, when the thread's timer fires at `deadline` (or a
  // signal cancels it), record `end`, stop the sessions and stop the context.
  // Returns the status to exit with (kExitFailure if a connection failed).
  [[nodiscard]] int runTimed(std::string_view impl, const Start& start);
  // The same, for sessions driven by callbacks: start() on each at the start,
  // stop() on each at the end.
  [[nodiscard]] int runTimed(std::string_view impl) { return runTimed(impl, &startSessions); }

 private:
  static void startSessions(Thread& thread, boost::asio::io_context& context,
                            Clock::time_point deadline);
  void onSignal();
  [[nodiscard]] int report(std::string_view impl, Clock::time_point start) const;

  const std::string program_;
  const ClientArgs args_;
  IoContextPool pool_;
  std::vector<std::unique_ptr<Thread>> threads_;
  bool untimed_ = false;      // read by the handler, on this (the main) thread
  bool interrupted_ = false;  // a signal came during the untimed phase
  boost::asio::signal_set signals_;
};

template <typename Thread>
PingClient<Thread>::PingClient(std::string_view program, const ClientArgs& args)
    : program_(program),
      args_(args),
      pool_(args.threads, /*keepAlive=*/false),
      signals_(pool_.context(0), SIGINT, SIGTERM) {
  for (int t = 0; t < args.threads; ++t) {
    threads_.push_back(std::make_unique<Thread>(pool_.context(t)));
  }
  signals_.async_wait([this](boost::system::error_code ec, int) {
    if (!ec) onSignal();
  });
}

template <typename Thread>
void PingClient<Thread>::onSignal() {
  if (untimed_) {
    interrupted_ = true;
    pool_.stop();
    return;
  }
  // In the window a signal ends the run early, as the deadline would: each
  // thread's timer is cancelled, and its handler stops the sessions and the
  // context. The cancel lands after each context's start work, which
  // runTimed() puts there before the pool runs.
  for (int t = 0; t < args_.threads; ++t) {
    Thread* state = threads_[t].get();
    boost::asio::post(pool_.context(t), [state] { state->timer.cancel(); });
  }
}

template <typename Thread>
template <typename MakeSession>
std::optional<int> PingClient<Thread>::connectAll(MakeSession makeSession) {
  const boost::asio::ip::tcp::endpoint endpoint(
      boost::asio::ip::make_address(args_.endpoint.address), args_.endpoint.port);
  for (int i = 0; i < args_.sessions; ++i) {
    const int t = i % args_.threads;
    auto session = makeSession(t);
    try {
      session->connect(endpoint);
    } catch (const boost::system::system_error& e) {
      if (e.code() == boost::asio::error::interrupted) {
        // Only SIGINT/SIGTERM have a handler (the signal_set's), and asio
        // installs it without SA_RESTART: one of them came mid-connect.
        std::fprintf(stderr, "%s: interrupted while connecting, no result\n", program_.c_str());
        return 0;
      }
      std::fprintf(stderr, "%s: connect %d to %s failed: %s\n", program_.c_str(), i,
                   formatEndpoint(args_.endpoint.address, args_.endpoint.port).c_str(),
                   e.code().message().c_str());
      return kExitFailure;
    }
    threads_[t]->sessions.push_back(std::move(session));
  }
  return std::nullopt;
}

template <typename Thread>
bool PingClient<Thread>::runUntimed(const Setup& setup) {
  untimed_ = true;
  for (int t = 0; t < args_.threads; ++t) setup(*threads_[t], pool_.context(t));
  pool_.run();
  untimed_ = false;
  if (interrupted_) return false;
  for (int t = 0; t < args_.threads; ++t) pool_.context(t).restart();
  return true;
}

template <typename Thread>
int PingClient<Thread>::runTimed(std::string_view impl, const Start& start) {
  // START/STOP let a runner sample the server's CPU time over the window.
  std::printf("START\n");
  std::fflush(stdout);
  const Clock::time_point begin = Clock::now();
  const auto deadline = begin + std::chrono::duration_cast<Clock::duration>(args_.time);
  for (int t = 0; t < args_.threads; ++t) start(*threads_[t], pool_.context(t), deadline);
  pool_.run();
  std::printf("STOP\n");
  std::fflush(stdout);
  return report(impl, begin);
}

template <typename Thread>
void PingClient<Thread>::startSessions(Thread& thread, boost::asio::io_context& context,
                                       Clock::time_point deadline) {
  Thread* state = &thread;
  boost::asio::io_context* ctx = &context;
  boost::asio::post(context, [state, ctx, deadline] {
    for (auto& session : state->sessions) session->start();
    state->timer.expires_at(deadline);
    state->timer.async_wait([state, ctx](boost::system::error_code) {
      state->end = Clock::now();
      for (auto& session : state->sessions) session->stop();
      // Closing made every pending handler an operation_aborted one; no
      // need to run them, they count nothing.
      ctx->stop();
    });
  });
}

template <typename Thread>
int PingClient<Thread>::report(std::string_view impl, Clock::time_point start) const {
  int64_t bytes = 0;
  int64_t messages = 0;
  Clock::time_point end = start;
  for (const auto& state : threads_) {
    if (!state->stats.error.empty()) {
      std::fprintf(stderr, "%s: a connection failed: %s\n", program_.c_str(),
                   state->stats.error.c_str());
      return kExitFailure;
    }
    bytes += state->stats.bytes;
    messages += state->stats.messages;
    end = std::max(end, state->end);
  }
  std::printf("%s\n", formatResult(impl, args_, bytes, messages, end - start).c_str());
  return 0;
}

}  // namespace pingpong
