// echo_server: a TCP echo server on libnet. Every byte a client sends comes
// back to it unchanged. Connections are accepted on the main thread's loop
// and served there (--threads 0) or spread round-robin over I/O loop threads.
//
// SIGINT / SIGTERM stop it cleanly (exit 0). They are taken through a
// signalfd read on the main loop rather than an async signal handler, so the
// shutdown runs as an ordinary loop callback: quit() the loop, then tear the
// server down on the loop thread by leaving main()'s scope.
//
// Exit status: 0 after a signal, 1 if the server cannot be set up (port in
// use, permission denied), 2 for bad command-line arguments.

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/Channel.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"

namespace {

using libnet::Buffer;
using libnet::Channel;
using libnet::EventLoop;
using libnet::InetAddress;
using libnet::TcpConnectionPtr;
using libnet::TcpServer;
using libnet::Timestamp;
using libnet::UniqueFd;

constexpr int kExitSetupError = 1;
constexpr int kExitUsage = 2;
// More loops than this is a typo, not a configuration.
constexpr int kMaxThreads = 1024;

constexpr std::string_view kUsage =
    "usage: echo_server [--address ADDR] [--port N] [--threads N]\n"
    "\n"
    "  --address ADDR  numeric IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --port N        TCP port, 0..65535; 0 picks a free one (default 2007)\n"
    "  --threads N     I/O loop threads; 0 serves everything on the main thread (default 0)\n"
    "  --help          print this help and exit\n"
    "\n"
    "Prints \"echo_server listening on IP:PORT\" once ready. SIGINT or SIGTERM stops it.\n";

struct Options {
  std::string address = "0.0.0.0";
  uint16_t port = 2007;
  int threads = 0;
};

enum class ParseOutcome { kOk, kHelp, kUnknownOption, kBadValue };

std::optional<int> parseNonNegativeInt(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// Accepts "--flag VALUE" and "--flag=VALUE". On kBadValue, *error says which
// flag and why; an unknown option is reported here and answered with usage.
ParseOutcome parseArgs(int argc, char* argv[], Options* options, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") return ParseOutcome::kHelp;
    std::string_view flag = arg;
    std::optional<std::string_view> value;
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    if (flag != "--address" && flag != "--port" && flag != "--threads") {
      std::cerr << "echo_server: unknown option '" << arg << "'\n";
      return ParseOutcome::kUnknownOption;
    }
    if (!value) {
      if (i + 1 >= argc) {
        *error = "option " + std::string(flag) + " needs a value";
        return ParseOutcome::kBadValue;
      }
      value = argv[++i];
    }
    if (flag == "--address") {
      options->address = std::string(*value);
    } else if (flag == "--port") {
      auto port = InetAddress::parsePort(*value);
      if (!port) {
        *error = "invalid port '" + std::string(*value) + "' (expected 0..65535)";
        return ParseOutcome::kBadValue;
      }
      options->port = *port;
    } else {
      auto threads = parseNonNegativeInt(*value);
      if (!threads || *threads > kMaxThreads) {
        *error = "invalid thread count '" + std::string(*value) + "' (expected 0.." +
                 std::to_string(kMaxThreads) + ")";
        return ParseOutcome::kBadValue;
      }
      options->threads = *threads;
    }
  }
  return ParseOutcome::kOk;
}

void onConnection(const TcpConnectionPtr& conn) {
  LOG_INFO << "connection " << conn->name() << " from " << conn->peerAddress().toIpPort()
           << (conn->connected() ? " up" : " down");
}

void onMessage(const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) { conn->send(buffer); }

// Drains the signalfd (edge-triggered: every queued signal must be read now)
// and stops the loop if a stop signal was among them.
void onSignal(int signalFd, EventLoop* loop) {
  bool stop = false;
  signalfd_siginfo info;
  for (;;) {
    const ssize_t n = ::read(signalFd, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) {
      LOG_INFO << "received SIG" << sigabbrev_np(static_cast<int>(info.ssi_signo))
               << ", shutting down";
      stop = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) LOG_SYSERR << "read signalfd";
    break;
  }
  if (stop) loop->quit();
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  std::string error;
  switch (parseArgs(argc, argv, &options, &error)) {
    case ParseOutcome::kOk:
      break;
    case ParseOutcome::kHelp:
      std::cout << kUsage;
      return 0;
    case ParseOutcome::kUnknownOption:
      std::cerr << kUsage;
      return kExitUsage;
    case ParseOutcome::kBadValue:
      std::cerr << "echo_server: " << error << " (see --help)\n";
      return kExitUsage;
  }

  const std::optional<InetAddress> listenAddr = InetAddress::parse(options.address, options.port);
  if (!listenAddr) {
    std::cerr << "echo_server: invalid address '" << options.address
              << "' (expected a numeric IPv4 or IPv6 address)\n";
    return kExitUsage;
  }

  // Blocked before any thread exists, so every I/O thread inherits the mask and
  // the signals stay pending for the signalfd instead of killing the process.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  if (const int err = ::pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr); err != 0) {
    std::cerr << "echo_server: pthread_sigmask: " << std::strerror(err) << "\n";
    return kExitSetupError;
  }
  UniqueFd signalFd(::signalfd(-1, &stopSignals, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signalFd) {
    std::cerr << "echo_server: signalfd: " << std::strerror(errno) << "\n";
    return kExitSetupError;
  }

  EventLoop loop;
  // Declared after the loop so it is destroyed first, on this (the loop's)
  // thread, once loop() has returned.
  std::unique_ptr<TcpServer> server;
  try {
    server = std::make_unique<TcpServer>(&loop, *listenAddr, "echo");
    server->setThreadNum(options.threads);
    server->setConnectionCallback(onConnection);
    server->setMessageCallback(onMessage);
    server->start();
  } catch (const std::system_error& e) {
    std::cerr << "echo_server: " << e.what() << "\n";
    return kExitSetupError;
  }

  // Registered only once nothing else can fail, so every path that adds it to
  // the poller also reaches the removal below.
  Channel signalChannel(&loop, signalFd.get());
  signalChannel.setReadCallback([&loop, fd = signalFd.get()](Timestamp) { onSignal(fd, &loop); });
  signalChannel.enableReading();

  std::cout << "echo_server listening on " << server->listenAddress().toIpPort() << std::endl;
  loop.loop();

  // A Channel must leave the poller before it dies.
  signalChannel.disableAll();
  signalChannel.remove();
  return 0;
}
