// TLS ping-pong client on Boost.Asio 1.74 (ssl::stream<tcp::socket> over
// OpenSSL 3). Connects every session and completes every TLS handshake
// (certificate checked against --tls-ca and the address argument) before
// the clock starts, so only the echo traffic is timed; then, as
// asio_pingpong_client does, sends one block on each session, echoes until
// the time is up, and prints one RESULT line.
//
// usage: asio_ssl_pingpong_client --tls-ca FILE <address> <port> <threads> <blocksize>
//            <sessions> <time_seconds>
#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/SslPingSession.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr const char* kProgram = "asio_ssl_pingpong_client";
constexpr const char* kUsageNote =
    "TLS: --tls-ca FILE (PEM CA that signed the server's certificate; required, before or "
    "after the arguments).";

[[noreturn]] void optionError(const std::string& message) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s --tls-ca FILE <address> <port> <threads> <blocksize> "
               "<sessions> <time_seconds>\n",
               kProgram, message.c_str(), kProgram);
  std::exit(pingpong::kExitUsage);
}

// Takes --tls-ca ("--tls-ca FILE" or "--tls-ca=FILE", anywhere on the line)
// out of argv, hands the rest to the shared positional parser.
pingpong::ClientArgs parseArgs(int argc, char** argv, std::string& caFile) {
  const pingpong::ProgramInfo info(kProgram, 256, kUsageNote);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      (void)pingpong::parseClientArgs(argc, argv, info);  // prints usage, exits 0
    }
  }
  std::vector<char*> positional{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--")) {
      positional.push_back(argv[i]);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    if (name != "--tls-ca") optionError("unknown option: " + std::string(arg));
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--")) {
      value = argv[++i];
    }
    if (value.empty()) optionError("option --tls-ca needs a FILE");
    caFile = std::move(value);
  }
  const int count = static_cast<int>(positional.size());
  positional.push_back(nullptr);
  pingpong::ClientArgs args = pingpong::parseClientArgs(count, positional.data(), info);
  if (caFile.empty()) optionError("missing --tls-ca FILE");
  return args;
}

// OpenSSL 3 reports a missing or unreadable PEM file as a system-library
// error that asio can only call "asio.ssl error"; opening it first gives the
// errno text instead.
bool readable(const std::string& file, const char* what) {
  std::FILE* f = std::fopen(file.c_str(), "r");
  if (f == nullptr) {
    std::fprintf(stderr, "%s: cannot read %s %s: %s\n", kProgram, what, file.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fclose(f);
  return true;
}

// What one thread owns: its sessions, its counters and its stop timer. Only
// that thread touches it between run() starting and returning.
struct ThreadState {
  explicit ThreadState(boost::asio::io_context& context) : timer(context) {}
  std::vector<std::shared_ptr<pingpong::SslPingSession>> sessions;
  pingpong::SessionStats stats;
  boost::asio::steady_timer timer;
  Clock::time_point end;
  size_t handshakesLeft = 0;
  std::string handshakeError;  // the first one seen on this thread
};

}  // namespace

int main(int argc, char** argv) {
  std::string caFile;
  const pingpong::ClientArgs args = parseArgs(argc, argv, caFile);

  // Declared before the sessions so that it outlives them. TLS 1.2 at least,
  // default ciphers, as the server; verify_peer makes a certificate that does
  // not chain to the CA fail the handshake.
  boost::asio::ssl::context ssl(boost::asio::ssl::context::tls_client);
  ssl.set_options(boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                  boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
  ssl.set_verify_mode(boost::asio::ssl::verify_peer);
  if (!readable(caFile, "CA file")) return pingpong::kExitFailure;
  try {
    ssl.load_verify_file(caFile);
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "%s: cannot load CA file %s: %s\n", kProgram, caFile.c_str(),
                 e.code().message().c_str());
    return pingpong::kExitFailure;
  }

  pingpong::IoContextPool pool(args.threads, /*keepAlive=*/false);
  std::vector<std::unique_ptr<ThreadState>> threads;
  for (int t = 0; t < args.threads; ++t) {
    threads.push_back(std::make_unique<ThreadState>(pool.context(t)));
  }

  // The run has two phases, each one pool.run(): the handshakes, then the
  // timed echo. SIGINT/SIGTERM during the handshakes stop the pool and end
  // the program without a result; during the echo they end the run early, as
  // the deadline would (each thread's timer is cancelled, and its handler
  // stops the sessions and the context). Installed before the connections
  // are made, so a signal then does not kill the process either. The handler
  // runs on context 0, which runs on this (the main) thread, so it reads
  // `handshaking` without a race.
  bool handshaking = true;
  bool interrupted = false;
  boost::asio::signal_set signals(pool.context(0), SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (ec) return;
    if (handshaking) {
      interrupted = true;
      pool.stop();
      return;
    }
    for (int t = 0; t < args.threads; ++t) {
      ThreadState* state = threads[t].get();
      boost::asio::post(pool.context(t), [state] { state->timer.cancel(); });
    }
  });

  const std::string where = pingpong::formatEndpoint(args.endpoint.address, args.endpoint.port);
  const tcp::endpoint endpoint(boost::asio::ip::make_address(args.endpoint.address),
                               args.endpoint.port);
  for (int i = 0; i < args.sessions; ++i) {
    const int t = i % args.threads;
    auto session = std::make_shared<pingpong::SslPingSession>(
        pool.context(t), ssl, threads[t]->stats, args.blocksize, args.endpoint.address);
    try {
      session->connect(endpoint);
    } catch (const boost::system::system_error& e) {
      if (e.code() == boost::asio::error::interrupted) {
        // Only SIGINT/SIGTERM have a handler (the signal_set's), and asio
        // installs it without SA_RESTART: one of them came mid-connect.
        std::fprintf(stderr, "%s: interrupted while connecting, no result\n", kProgram);
        return 0;
      }
      std::fprintf(stderr, "%s: connect %d to %s failed: %s\n", kProgram, i, where.c_str(),
                   e.code().message().c_str());
      return pingpong::kExitFailure;
    }
    threads[t]->sessions.push_back(std::move(session));
  }

  // Phase 1: every thread handshakes all its sessions at once (the server
  // sees them concurrently, as its threads allow) and stops its context when
  // the last one ends, failed or not.
  for (int t = 0; t < args.threads; ++t) {
    ThreadState* state = threads[t].get();
    boost::asio::io_context* context = &pool.context(t);
    boost::asio::post(*context, [state, context] {
      state->handshakesLeft = state->sessions.size();
      if (state->handshakesLeft == 0) {
        context->stop();  // fewer sessions than threads
        return;
      }
      for (auto& session : state->sessions) {
        session->handshake([state, context](const std::string& error) {
          if (!error.empty() && state->handshakeError.empty()) state->handshakeError = error;
          if (--state->handshakesLeft == 0) context->stop();
        });
      }
    });
  }
  pool.run();
  if (interrupted) {
    std::fprintf(stderr, "%s: interrupted during the TLS handshakes, no result\n", kProgram);
    return 0;
  }
  for (const auto& state : threads) {
    if (!state->handshakeError.empty()) {
      std::fprintf(stderr, "%s: TLS handshake with %s failed: %s\n", kProgram, where.c_str(),
                   state->handshakeError.c_str());
      return pingpong::kExitFailure;
    }
  }
  for (int t = 0; t < args.threads; ++t) pool.context(t).restart();
  handshaking = false;

  // Phase 2, as in asio_pingpong_client. START/STOP let a runner sample the
  // server's CPU time over the window.
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
      std::fprintf(stderr, "%s: a connection failed: %s\n", kProgram, state->stats.error.c_str());
      return pingpong::kExitFailure;
    }
    bytes += state->stats.bytes;
    messages += state->stats.messages;
    end = std::max(end, state->end);
  }
  std::printf("%s\n",
              pingpong::formatResult("asio-ssl", args, bytes, messages, end - start).c_str());
  return 0;
}
