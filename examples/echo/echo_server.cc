// echo_server: a TCP (or, with --unix, Unix domain socket) echo server on
// libnet. Every byte a client sends comes
// back to it unchanged. Connections are accepted on the main thread's loop
// and served there (--threads 0) or spread round-robin over I/O loop threads.
// With --idle-timeout, a client that sends nothing for that long is
// disconnected, with a line logged at INFO. A client that sends without
// reading its echo is held back: once more than --max-queued-output bytes
// wait for it, the server stops reading from it (TCP flow control then stops
// the client) until half of them have been written, so such a client costs
// the server a bounded amount of memory, not everything it sends.
//
// SIGINT / SIGTERM stop it cleanly (exit 0). They are taken by a SignalSet
// on the main loop rather than an async signal handler, so the shutdown runs
// as an ordinary loop callback: quit() the loop, then tear the server down on
// the loop thread by leaving main()'s scope.
//
// Exit status: 0 after a signal, 1 if the server cannot be set up (port in
// use, permission denied), 2 for bad command-line arguments.

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "base/AsyncLogging.h"
#include "base/LogFile.h"
#include "base/Logging.h"
#include "examples/common/CpuAffinityFlag.h"
#include "examples/common/Flags.h"
#include "examples/common/ServerTls.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/tls/TlsContext.h"

namespace {

using libnet::Buffer;
using libnet::EventLoop;
using libnet::InetAddress;
using libnet::SignalSet;
using libnet::TcpConnectionPtr;
using libnet::TcpServer;
using libnet::Timestamp;

constexpr int kExitSetupError = 1;
// More loops than this is a typo, not a configuration.
constexpr int kMaxThreads = 1024;
// A day; longer is a typo too.
constexpr int kMaxIdleTimeoutSeconds = 86400;
constexpr int kDefaultMaxQueuedOutput = 1024 * 1024;

constexpr std::string_view kUsage =
    "usage: echo_server [--address ADDR] [--port N] [--threads N] [--backend B]\n"
    "                   [--idle-timeout SECONDS] [--max-queued-output BYTES] [--log-dir DIR]\n"
    "                   [--tls-cert FILE --tls-key FILE] [--unix PATH] [--cpu-affinity LIST]\n"
    "\n"
    "  --address ADDR  numeric IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --port N        TCP port, 0..65535; 0 picks a free one (default 2007)\n"
    "  --unix PATH     listen on a Unix domain socket at PATH instead (\"@NAME\": the\n"
    "                  abstract name NAME); a stale socket file there is replaced\n"
    "  --threads N     I/O loop threads; 0 serves everything on the main thread (default 0)\n"
    "  --backend B     epoll, uring or auto (default auto: io_uring if it works here);\n"
    "                  the LIBNET_POLLER environment variable overrides it\n"
    "  --idle-timeout SECONDS\n"
    "                  disconnect a client that sends nothing for SECONDS (checked every\n"
    "                  second); 0 turns it off (default 0)\n"
    "  --max-queued-output BYTES\n"
    "                  stop reading from a client while more than BYTES of its echo wait\n"
    "                  to be sent to it, resume when half are out; 0 turns it off\n"
    "                  (default 1048576)\n"
    "  --cpu-affinity LIST\n"
    "                  pin the loops to CPUs (taskset's list: 0,2-3): with one CPU more\n"
    "                  than --threads, the main loop on the first and I/O loop i on the next\n"
    "                  ones; otherwise I/O loop i on CPU i mod count and the main loop\n"
    "                  unpinned (default: none pinned)\n"
    "  --log-dir DIR   log asynchronously to files in DIR instead of stderr\n"
    "  --tls-cert FILE serve TLS (1.2/1.3) with this PEM certificate chain\n"
    "  --tls-key FILE  ... and this PEM private key (both or neither)\n"
    "  --help          print this help and exit\n"
    "\n"
    "Prints \"echo_server listening on IP:PORT\" (or unix:PATH) once ready. SIGINT or\n"
    "SIGTERM stops it.\n";

struct Options {
  std::string address = "0.0.0.0";
  uint16_t port = 2007;
  std::optional<libnet::SocketAddress> unixSocket;  // --unix: instead of address:port
  int threads = 0;
  int idleTimeoutSeconds = 0;                     // 0: off
  int maxQueuedOutput = kDefaultMaxQueuedOutput;  // 0: off
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  std::string logDir;  // empty: log to stderr
  libnet::ServerTls tls;
  libnet::CpuAffinityFlag cpuAffinity;
};

// nullopt: go on; otherwise the exit status (the reason is printed).
std::optional<int> parseArgs(int argc, char* argv[], Options* options) {
  libnet::Flags flags("echo_server", std::string(kUsage));
  flags.addAddress("--address", &options->address);
  flags.addPort("--port", &options->port);
  flags.addUnixSocket("--unix", &options->unixSocket);
  flags.exclude("--unix", "--address");
  flags.exclude("--unix", "--port");
  flags.addInt("--threads", &options->threads, 0, kMaxThreads);
  flags.addBackend("--backend", &options->backend);
  flags.addInt("--idle-timeout", &options->idleTimeoutSeconds, 0, kMaxIdleTimeoutSeconds);
  flags.addInt("--max-queued-output", &options->maxQueuedOutput, 0,
               std::numeric_limits<int>::max());
  flags.addDirectory("--log-dir", &options->logDir);
  options->tls.addTo(&flags);
  options->cpuAffinity.addTo(&flags);
  if (const std::optional<int> exitStatus = flags.parse(argc, argv)) return exitStatus;
  if (const std::string problem = options->tls.check(); !problem.empty()) {
    std::cerr << "echo_server: " << problem << "\n" << kUsage;
    return libnet::Flags::kExitUsage;
  }
  if (const std::string problem = options->cpuAffinity.check(options->threads); !problem.empty()) {
    std::cerr << "echo_server: " << problem << " (see --help)\n";
    return libnet::Flags::kExitUsage;
  }
  return std::nullopt;
}

void onConnection(const TcpConnectionPtr& conn) {
  LOG_INFO << "connection " << conn->name() << " from " << conn->peerAddress().toIpPort()
           << (conn->connected() ? " up" : " down");
}

void onMessage(const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) { conn->send(buffer); }

void onIdle(const TcpConnectionPtr& conn) {
  LOG_INFO << "connection " << conn->name() << " from " << conn->peerAddress().toIpPort()
           << " idle too long, disconnecting";
  conn->forceClose();
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  if (const std::optional<int> exitStatus = parseArgs(argc, argv, &options)) return *exitStatus;
  const libnet::SocketAddress listenAddr =
      options.unixSocket
          ? *options.unixSocket
          : libnet::SocketAddress(*InetAddress::parse(options.address, options.port));

  // Declared before the server so that it outlives it: lines logged while the
  // server shuts down still reach the file, and stop() drains them at exit.
  std::unique_ptr<libnet::AsyncLogging> asyncLog;
  if (!options.logDir.empty()) {
    auto logFile = std::make_shared<libnet::LogFile>(options.logDir, "echo_server");
    if (const int err = logFile->openError()) {
      std::cerr << "echo_server: cannot write a log file in '" << options.logDir
                << "': " << std::strerror(err) << "\n";
      return libnet::Flags::kExitUsage;
    }
    asyncLog = std::make_unique<libnet::AsyncLogging>(libnet::AsyncLogging::fileSink(logFile));
    asyncLog->start();
    asyncLog->installAsDefaultSink();
  }

  try {
    EventLoop loop(options.backend);
    // Before the server starts its threads, so that a signal that comes
    // while it starts already stops it cleanly.
    SignalSet stop(&loop, {SIGINT, SIGTERM}, [&loop](int signo) {
      LOG_INFO << "signal " << signo << ", shutting down";
      loop.quit();
    });
    TcpServer server(&loop, listenAddr, "echo",
                     {.threads = options.threads,
                      .cpuAffinity = options.cpuAffinity.ioLoopCpus(),
                      .layer = options.tls.layer(),
                      .maxQueuedOutput = static_cast<size_t>(options.maxQueuedOutput),
                      .idleTimeout = std::chrono::seconds(options.idleTimeoutSeconds)});
    server.setConnectionCallback(onConnection);
    server.setMessageCallback(onMessage);
    server.setIdleCallback(onIdle);
    server.start();
    if (const std::string pinned = options.cpuAffinity.pinMainLoop(); !pinned.empty()) {
      std::cout << "echo_server: " << pinned << "\n";
    }
    std::cout << "echo_server listening on " << server.listenAddress().toIpPort() << std::endl;
    loop.loop();
    // Destroyed in reverse order, on this (the loop's) thread.
  } catch (const std::system_error& e) {
    std::cerr << "echo_server: " << e.what() << "\n";
    return kExitSetupError;
  } catch (const std::invalid_argument& e) {  // a bad option value
    std::cerr << "echo_server: " << e.what() << "\n";
    return kExitSetupError;
  } catch (const libnet::tls::Error& e) {
    std::cerr << "echo_server: " << e.what() << "\n";
    return kExitSetupError;
  }
  return 0;
}
