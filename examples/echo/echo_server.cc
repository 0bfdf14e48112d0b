// echo_server: a TCP echo server on libnet. Every byte a client sends comes
// back to it unchanged. Connections are accepted on the main thread's loop
// and served there (--threads 0) or spread round-robin over I/O loop threads.
// With --idle-timeout, a client that sends nothing for that long is
// disconnected, with a line logged at INFO.
//
// SIGINT / SIGTERM stop it cleanly (exit 0). They are taken through a
// signalfd read on the main loop rather than an async signal handler, so the
// shutdown runs as an ordinary loop callback: quit() the loop, then tear the
// server down on the loop thread by leaving main()'s scope.
//
// Exit status: 0 after a signal, 1 if the server cannot be set up (port in
// use, permission denied), 2 for bad command-line arguments.

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "base/AsyncLogging.h"
#include "base/LogFile.h"
#include "base/Logging.h"
#include "examples/common/QuitOnSignal.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"

namespace {

using libnet::Buffer;
using libnet::EventLoop;
using libnet::InetAddress;
using libnet::QuitOnSignal;
using libnet::TcpConnectionPtr;
using libnet::TcpServer;
using libnet::Timestamp;

constexpr int kExitSetupError = 1;
constexpr int kExitUsage = 2;
// More loops than this is a typo, not a configuration.
constexpr int kMaxThreads = 1024;
// A day; longer is a typo too.
constexpr int kMaxIdleTimeoutSeconds = 86400;

constexpr std::string_view kUsage =
    "usage: echo_server [--address ADDR] [--port N] [--threads N] [--idle-timeout SECONDS]\n"
    "                   [--log-dir DIR]\n"
    "\n"
    "  --address ADDR  numeric IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --port N        TCP port, 0..65535; 0 picks a free one (default 2007)\n"
    "  --threads N     I/O loop threads; 0 serves everything on the main thread (default 0)\n"
    "  --idle-timeout SECONDS\n"
    "                  disconnect a client that sends nothing for SECONDS (checked every\n"
    "                  second); 0 turns it off (default 0)\n"
    "  --log-dir DIR   log asynchronously to files in DIR instead of stderr\n"
    "  --help          print this help and exit\n"
    "\n"
    "Prints \"echo_server listening on IP:PORT\" once ready. SIGINT or SIGTERM stops it.\n";

struct Options {
  std::string address = "0.0.0.0";
  uint16_t port = 2007;
  int threads = 0;
  int idleTimeoutSeconds = 0;  // 0: off
  std::string logDir;          // empty: log to stderr
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
    if (flag != "--address" && flag != "--port" && flag != "--threads" && flag != "--log-dir" &&
        flag != "--idle-timeout") {
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
    } else if (flag == "--log-dir") {
      if (value->empty() || !std::filesystem::is_directory(std::string(*value))) {
        *error = "log directory '" + std::string(*value) + "' is not a directory";
        return ParseOutcome::kBadValue;
      }
      options->logDir = std::string(*value);
    } else if (flag == "--port") {
      auto port = InetAddress::parsePort(*value);
      if (!port) {
        *error = "invalid port '" + std::string(*value) + "' (expected 0..65535)";
        return ParseOutcome::kBadValue;
      }
      options->port = *port;
    } else if (flag == "--idle-timeout") {
      auto seconds = parseNonNegativeInt(*value);
      if (!seconds || *seconds > kMaxIdleTimeoutSeconds) {
        *error = "invalid idle timeout '" + std::string(*value) + "' (expected 0.." +
                 std::to_string(kMaxIdleTimeoutSeconds) + " seconds)";
        return ParseOutcome::kBadValue;
      }
      options->idleTimeoutSeconds = *seconds;
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

void onIdle(const TcpConnectionPtr& conn) {
  LOG_INFO << "connection " << conn->name() << " from " << conn->peerAddress().toIpPort()
           << " idle too long, disconnecting";
  conn->forceClose();
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

  // Declared before the server so that it outlives it: lines logged while the
  // server shuts down still reach the file, and stop() drains them at exit.
  std::unique_ptr<libnet::AsyncLogging> asyncLog;
  if (!options.logDir.empty()) {
    asyncLog = std::make_unique<libnet::AsyncLogging>(libnet::AsyncLogging::fileSink(
        std::make_shared<libnet::LogFile>(options.logDir, "echo_server")));
    asyncLog->start();
    asyncLog->installAsDefaultSink();
  }

  try {
    // Blocked before any thread exists, so every I/O thread inherits the mask
    // and the signals stay pending for the signalfd instead of killing us.
    QuitOnSignal::blockStopSignals();
    EventLoop loop;
    TcpServer server(&loop, *listenAddr, "echo");
    server.setThreadNum(options.threads);
    server.setConnectionCallback(onConnection);
    server.setMessageCallback(onMessage);
    if (options.idleTimeoutSeconds > 0) {
      server.setIdleTimeout(std::chrono::seconds(options.idleTimeoutSeconds));
      server.setIdleCallback(onIdle);
    }
    server.start();
    QuitOnSignal quitOnSignal(&loop);
    std::cout << "echo_server listening on " << server.listenAddress().toIpPort() << std::endl;
    loop.loop();
    // Destroyed in reverse order, on this (the loop's) thread.
  } catch (const std::system_error& e) {
    std::cerr << "echo_server: " << e.what() << "\n";
    return kExitSetupError;
  }
  return 0;
}
