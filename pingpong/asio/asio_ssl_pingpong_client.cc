// TLS ping-pong client on Boost.Asio 1.74 (ssl::stream<tcp::socket> over
// OpenSSL 3). Connects every session and completes every TLS handshake
// (certificate checked against --tls-ca and the address argument) before
// the clock starts, so only the echo traffic is timed; then, as
// asio_pingpong_client does, sends one block on each session, echoes until
// the time is up, and prints one RESULT line.
//
// usage: asio_ssl_pingpong_client --tls-ca FILE <address> <port> <threads> <blocksize>
//            <sessions> <time_seconds>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/verify_mode.hpp>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>

#include "pingpong/asio/ClientThread.h"
#include "pingpong/asio/PingClient.h"
#include "pingpong/asio/PingSession.h"
#include "pingpong/asio/SslOptions.h"
#include "pingpong/asio/TlsStream.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using Session = pingpong::PingSession<pingpong::TlsStream>;

constexpr const char* kProgram = "asio_ssl_pingpong_client";

// What one thread owns, and how its handshakes are going. Only that thread
// touches it between run() starting and returning.
struct ThreadState : pingpong::ClientThread<Session> {
  using ClientThread::ClientThread;
  size_t handshakesLeft = 0;
  std::string handshakeError;  // the first one seen on this thread
};

// TLS 1.2 at least, default ciphers, as the server; verify_peer makes a
// certificate that does not chain to the CA fail the handshake. False, after
// saying why, if the CA file cannot be used.
bool configureContext(boost::asio::ssl::context& ssl, const std::string& caFile) {
  ssl.set_options(boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                  boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
  ssl.set_verify_mode(boost::asio::ssl::verify_peer);
  if (!pingpong::readable(kProgram, caFile, "CA file")) return false;
  try {
    ssl.load_verify_file(caFile);
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "%s: cannot load CA file %s: %s\n", kProgram, caFile.c_str(),
                 e.code().message().c_str());
    return false;
  }
  return true;
}

// Phase 1 on one thread: handshakes all its sessions at once (the server sees
// them concurrently, as its threads allow) and stops its context when the
// last one ends, failed or not.
void startHandshakes(ThreadState& thread, boost::asio::io_context& context) {
  ThreadState* state = &thread;
  boost::asio::io_context* ctx = &context;
  boost::asio::post(context, [state, ctx] {
    state->handshakesLeft = state->sessions.size();
    if (state->handshakesLeft == 0) {
      ctx->stop();  // fewer sessions than threads
      return;
    }
    for (auto& session : state->sessions) {
      session->handshake([state, ctx](const std::string& error) {
        if (!error.empty() && state->handshakeError.empty()) state->handshakeError = error;
        if (--state->handshakesLeft == 0) ctx->stop();
      });
    }
  });
}

// False, after saying which, if a thread saw a handshake fail.
bool allHandshaken(pingpong::PingClient<ThreadState>& client, const pingpong::ClientArgs& args) {
  for (int t = 0; t < args.threads; ++t) {
    const std::string& error = client.thread(t).handshakeError;
    if (!error.empty()) {
      std::fprintf(stderr, "%s: TLS handshake with %s failed: %s\n", kProgram,
                   pingpong::formatEndpoint(args.endpoint.address, args.endpoint.port).c_str(),
                   error.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  pingpong::SslOptions tls;
  const pingpong::ClientArgs args = pingpong::parseSslClientArgs(argc, argv, kProgram, tls);

  // Declared before the sessions so that it outlives them.
  boost::asio::ssl::context ssl(boost::asio::ssl::context::tls_client);
  if (!configureContext(ssl, tls.ca)) return pingpong::kExitFailure;

  // The run has two phases, each one pool run: the handshakes, then the
  // timed echo. SIGINT/SIGTERM during the handshakes end the program without
  // a result; during the echo they end the run early, as the deadline would.
  pingpong::PingClient<ThreadState> client(kProgram, args);
  if (auto status = client.connectAll([&](int t) {
        return std::make_shared<Session>(
            pingpong::makeClientStream(client.context(t), ssl, args.endpoint.address),
            client.thread(t).stats, args.blocksize);
      })) {
    return *status;
  }

  if (!client.runUntimed(startHandshakes)) {
    std::fprintf(stderr, "%s: interrupted during the TLS handshakes, no result\n", kProgram);
    return 0;
  }
  if (!allHandshaken(client, args)) return pingpong::kExitFailure;

  // Phase 2, as in asio_pingpong_client.
  return client.runTimed("asio-ssl");
}
