// echo_client: checks an echo server. Each of --connections connections sends
// --message, waits until exactly those bytes have come back, and repeats that
// --count times; all connections run at once on one EventLoop (main thread).
//
// Prints "echoed COUNT x SIZE bytes OK" per connection and exits 0 when every
// connection has verified all its echoes. A failed connect attempt, a
// mismatch, a connection the server closes early, or --timeout expiring exits
// 1 with the reason on stderr; bad arguments exit 2.
//
// A connect attempt that fails (refused, unreachable, ...) ends the run at
// once, e.g. "echo_client: connect to 127.0.0.1:2007: Connection refused":
// TcpClient would retry it with backoff, but a checker is pointed at a server
// that is already up, so waiting out --timeout would only hide the reason.

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/Logging.h"
#include "examples/common/Flags.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/dns/Resolver.h"

namespace {

using libnet::Buffer;
using libnet::EventLoop;
using libnet::InetAddress;
using libnet::TcpClient;
using libnet::TcpConnectionPtr;
using libnet::Timestamp;

constexpr int kExitFailure = 1;
// Each connection is an fd and a socket buffer pair: beyond this it is a typo.
constexpr int kMaxConnections = 10000;

constexpr std::string_view kUsage =
    "usage: echo_client [--address ADDR | --host NAME] [--port N] [--unix PATH]\n"
    "                   [--message TEXT] [--count N] [--connections N] [--timeout SECONDS]\n"
    "\n"
    "  --address ADDR      numeric IPv4 or IPv6 address of the server (default 127.0.0.1)\n"
    "  --host NAME         the server's host name instead, looked up through the\n"
    "                      system's name servers and /etc/hosts; IPv6 and IPv4 raced\n"
    "                      (Happy Eyeballs)\n"
    "  --port N            server port, 1..65535 (default 2007)\n"
    "  --unix PATH         connect to the Unix domain socket at PATH instead\n"
    "                      (\"@NAME\": the abstract name NAME)\n"
    "  --message TEXT      bytes to send, non-empty (default \"hello libnet\")\n"
    "  --count N           round trips per connection, one after the other (default 1)\n"
    "  --connections N     concurrent connections (default 1)\n"
    "  --timeout SECONDS   give up after this long, fractions allowed (default 5)\n"
    "  --help              print this help and exit\n"
    "\n"
    "A connect attempt that fails (refused, unreachable) ends the run at once;\n"
    "--timeout bounds the rest, a connect that gets no answer included.\n"
    "\n"
    "Exit status: 0 all echoes verified, 1 connect failure / mismatch / connection\n"
    "closed early / timeout, 2 bad arguments.\n";

struct Options {
  std::string address = "127.0.0.1";
  std::string host;  // --host: by name instead of address
  uint16_t port = 2007;
  std::optional<libnet::SocketAddress> unixSocket;  // --unix: instead of address:port
  std::string message = "hello libnet";
  int count = 1;
  int connections = 1;
  double timeoutSeconds = 5;
  std::string timeoutText = "5";  // as typed, for the timeout message
};

std::optional<double> parsePositiveSeconds(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  // The upper bound keeps the conversion to nanoseconds from overflowing.
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !(value > 0) ||
      value > 1e6) {
    return std::nullopt;
  }
  return value;
}

// nullopt: go on; otherwise the exit status (the reason is printed).
std::optional<int> parseArgs(int argc, char* argv[], Options* options) {
  libnet::Flags flags("echo_client", std::string(kUsage));
  flags.addAddress("--address", &options->address);
  flags.addCustom("--port", [options](std::string_view text) {
    const auto port = InetAddress::parsePort(text);
    if (!port || *port == 0) return "invalid port '" + std::string(text) + "' (expected 1..65535)";
    options->port = *port;
    return std::string();
  });
  flags.addCustom("--host", [options](std::string_view text) {
    if (text.empty()) return std::string("--host needs a name");
    options->host = std::string(text);
    return std::string();
  });
  flags.addUnixSocket("--unix", &options->unixSocket);
  flags.exclude("--unix", "--address");
  flags.exclude("--unix", "--port");
  flags.exclude("--unix", "--host");
  flags.exclude("--host", "--address");
  flags.addCustom("--message", [options](std::string_view text) {
    // An empty message would have nothing to echo and nothing to verify.
    if (text.empty()) return std::string("must not be empty");
    options->message = std::string(text);
    return std::string();
  });
  flags.addInt("--count", &options->count, 1, std::numeric_limits<int>::max());
  flags.addInt("--connections", &options->connections, 1, kMaxConnections);
  flags.addCustom("--timeout", [options](std::string_view text) {
    const auto seconds = parsePositiveSeconds(text);
    if (!seconds) {
      return "invalid timeout '" + std::string(text) + "' (expected a positive number of seconds)";
    }
    options->timeoutSeconds = *seconds;
    options->timeoutText = std::string(text);
    return std::string();
  });
  return flags.parse(argc, argv);
}

// One connection's progress. Plain data: the run's callbacks below drive it.
struct Session {
  int index = 0;  // 1-based, for messages
  std::unique_ptr<TcpClient> client;
  int echoed = 0;       // round trips verified
  size_t received = 0;  // bytes of the current echo verified so far
  bool done = false;
};

// The state every callback shares; lives in main() for the whole loop.
struct Run {
  const Options& options;
  EventLoop& loop;
  std::vector<Session> sessions;
  int everConnected = 0;
  int live = 0;  // connections currently up
  int verified = 0;
  int exitCode = 0;
  bool finishing = false;
};

// Stops every connection attempt and closes every connection, then quits the
// loop once the last one is down. Quitting only then lets each TcpClient run
// its connection's close on the loop; destroying a client whose connection is
// still open after loop() has returned would queue that close to a loop that
// never runs again.
void finish(Run* run, int exitCode) {
  if (run->finishing) return;
  run->finishing = true;
  run->exitCode = exitCode;
  for (Session& session : run->sessions) {
    session.client->stop();
    if (TcpConnectionPtr conn = session.client->connection()) conn->forceClose();
  }
  if (run->live == 0) run->loop.quit();
}

void fail(Run* run, const std::string& message) {
  if (run->finishing) return;
  std::cerr << "echo_client: " << message << "\n";
  finish(run, kExitFailure);
}

void onConnection(Run* run, Session* session, const TcpConnectionPtr& conn) {
  if (conn->connected()) {
    ++run->live;
    ++run->everConnected;
    if (run->finishing) {
      conn->forceClose();
      return;
    }
    LOG_INFO << "connection " << session->index << " up: " << conn->localAddress().toIpPort()
             << " -> " << conn->peerAddress().toIpPort();
    // Small round trips: do not let Nagle hold the next message back.
    conn->setTcpNoDelay(true);
    conn->send(std::string_view(run->options.message));
    return;
  }
  --run->live;
  if (run->finishing) {
    if (run->live == 0) run->loop.quit();
    return;
  }
  if (!session->done) {
    fail(run, "connection " + std::to_string(session->index) + " to " +
                  conn->peerAddress().toIpPort() + " closed by the server after " +
                  std::to_string(session->echoed) + " of " + std::to_string(run->options.count) +
                  " echoes");
  }
}

std::string unexpectedBytes(const Session& session, size_t count) {
  return "connection " + std::to_string(session.index) + ": " + std::to_string(count) +
         " unexpected bytes after the last echo";
}

// Verifies bytes as they arrive, in whatever pieces TCP delivers them.
void onMessage(Run* run, Session* session, const TcpConnectionPtr& conn, Buffer* buffer) {
  const std::string& message = run->options.message;
  while (buffer->readableBytes() > 0 && !run->finishing) {
    if (session->done) {
      fail(run, unexpectedBytes(*session, buffer->readableBytes()));
      break;
    }
    const size_t n = std::min(buffer->readableBytes(), message.size() - session->received);
    const std::string_view got(buffer->peek(), n);
    const std::string_view want(message.data() + session->received, n);
    if (got != want) {
      size_t at = 0;
      while (got[at] == want[at]) ++at;
      char detail[64];
      std::snprintf(detail, sizeof detail, "expected 0x%02x, got 0x%02x",
                    static_cast<unsigned char>(want[at]), static_cast<unsigned char>(got[at]));
      fail(run, "connection " + std::to_string(session->index) + ": echo " +
                    std::to_string(session->echoed + 1) + " differs at byte " +
                    std::to_string(session->received + at) + ": " + detail);
      break;
    }
    buffer->retrieve(n);
    session->received += n;
    if (session->received < message.size()) break;
    session->received = 0;
    if (++session->echoed < run->options.count) {
      conn->send(std::string_view(message));
      continue;
    }
    session->done = true;
    // Bytes already here past the last echo are a failure, not a success;
    // ones arriving later, after the run is over, go unseen.
    if (buffer->readableBytes() > 0) {
      fail(run, unexpectedBytes(*session, buffer->readableBytes()));
      break;
    }
    std::cout << "echoed " << session->echoed << " x " << message.size() << " bytes OK"
              << std::endl;
    if (++run->verified == static_cast<int>(run->sessions.size())) finish(run, 0);
  }
  // Whatever is left once we have failed is of no interest.
  if (run->finishing) buffer->retrieveAll();
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  if (const std::optional<int> exitStatus = parseArgs(argc, argv, &options)) return *exitStatus;
  const libnet::SocketAddress serverAddr =
      options.unixSocket
          ? *options.unixSocket
          : libnet::SocketAddress(*InetAddress::parse(options.address, options.port));

  EventLoop loop;
  // Only a client by name looks anything up (c-ares on this loop).
  std::shared_ptr<libnet::dns::Resolver> resolver;
  if (!options.host.empty() && !options.unixSocket) {
    resolver = std::make_shared<libnet::dns::Resolver>(&loop);
  }
  // Declared after the loop: the clients inside are destroyed first, on this
  // (the loop's) thread, after loop() has returned.
  Run run{options, loop, {}};
  run.sessions.resize(static_cast<size_t>(options.connections));
  for (size_t i = 0; i < run.sessions.size(); ++i) {
    Session* session = &run.sessions[i];
    session->index = static_cast<int>(i + 1);
    const std::string name = "echo_client#" + std::to_string(i + 1);
    session->client = resolver ? std::make_unique<TcpClient>(
                                     &loop, InetAddress::joinHostPort(options.host, options.port),
                                     name, TcpClient::Options{.resolver = resolver})
                               : std::make_unique<TcpClient>(&loop, serverAddr, name);
    if (resolver) {
      // By name, every lookup's and every attempt's error in one line.
      session->client->setConnectFailureCallback(
          [&run](const libnet::ConnectFailure& failure) { fail(&run, failure.message()); });
    }
    session->client->setConnectionCallback(
        [&run, session](const TcpConnectionPtr& conn) { onConnection(&run, session, conn); });
    session->client->setMessageCallback(
        [&run, session](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
          onMessage(&run, session, conn, buffer);
        });
    // fail() stops every client, this one included, from inside its own
    // callback; TcpClient then schedules no retry.
    session->client->setConnectErrorCallback([&run, address = serverAddr](int error) {
      fail(&run,
           "connect to " + address.toIpPort() + ": " + std::generic_category().message(error));
    });
  }

  const auto timeout = std::chrono::duration_cast<libnet::Duration>(
      std::chrono::duration<double>(options.timeoutSeconds));
  loop.runAfter(timeout, [&run] {
    fail(&run, "timed out after " + run.options.timeoutText +
                   " s (connected: " + std::to_string(run.everConnected) + " of " +
                   std::to_string(run.sessions.size()) + ")");
  });
  for (Session& session : run.sessions) session.client->connect();

  loop.loop();
  return run.exitCode;
}
