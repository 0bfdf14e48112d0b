#include "pingpong/ServerMain.h"

#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "base/AsyncLogging.h"
#include "base/LogFile.h"
#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/TcpServer.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"
#include "pingpong/Args.h"

namespace libnet::pingpong {

namespace {

std::string usage(const ServerProgram& program) {
  return std::string("usage: ") + program.name +
         " [--backend epoll|uring|auto] [--log-dir DIR]\n"
         "       [--tls-cert FILE --tls-key FILE] [--no-loop-timings] <address> <port> <threads>\n"
         "  Echoes everything it receives" +
         program.how +
         ". <threads> I/O loops (0: all on the\n"
         "  main loop). Prints \"listening on ADDR:PORT\" when ready; SIGINT/SIGTERM stop it.\n"
         "  The LIBNET_POLLER environment variable overrides --backend.\n"
         "  --log-dir DIR logs asynchronously to files in DIR instead of stderr.\n"
         "  --tls-cert/--tls-key serve TLS with this PEM certificate chain and key.\n"
         "  --no-loop-timings turns the loops' busy-time and lag timings off (their cost).\n";
}

// nullopt: go on. Otherwise the exit status to return now: 0 after --help,
// 2 after a bad option or combination (the reason and the usage printed).
std::optional<int> checkOptions(const pingpong::Args& args, const ServerProgram& program) {
  if (args.help) {
    std::cout << usage(program);
    return 0;
  }
  if (!args.error.empty()) {
    std::cerr << program.name << ": " << args.error << "\n" << usage(program);
    return 2;
  }
  if (args.tlsCert.empty() != args.tlsKey.empty() || !args.tlsCa.empty()) {
    std::cerr << program.name << ": --tls-cert and --tls-key go together (no --tls-ca)\n"
              << usage(program);
    return 2;
  }
  return std::nullopt;
}

// Null without a log file (no --log-dir); else started, and the default sink
// from now on.
std::unique_ptr<AsyncLogging> startFileLog(std::shared_ptr<LogFile> file) {
  if (!file) return nullptr;
  auto asyncLog = std::make_unique<AsyncLogging>(AsyncLogging::fileSink(std::move(file)));
  asyncLog->start();
  asyncLog->installAsDefaultSink();
  return asyncLog;
}

// Serves until SIGINT/SIGTERM; returns the exit status.
int serve(const pingpong::Args& args, const ServerProgram& program, const InetAddress& address,
          int threads) {
  try {
    // The I/O loops take this loop's options, the timings' switch with them.
    EventLoop loop(
        EventLoopOptions{.poller = args.backend, .ioUring = {}, .metrics = !args.noLoopTimings});
    // First, so that a signal during the set-up stays pending for it.
    SignalSet stop(&loop, {SIGINT, SIGTERM}, [&loop](int signo) {
      LOG_INFO << "signal " << signo << ", shutting down";
      loop.quit();
    });
    TcpServer::Options options{.threads = threads, .tcpNoDelay = true};
    if (!args.tlsCert.empty()) {
      tls::Context::ServerOptions serverTls;
      serverTls.certChainFile = args.tlsCert;
      serverTls.keyFile = args.tlsKey;
      options.layer = tls::newLayer(tls::Context::newServer(serverTls));
    }
    TcpServer server(&loop, address, program.name, options);
    program.serve(server);
    server.start();
    std::cout << "listening on " << server.listenAddress().toIpPort() << " ("
              << pollerKindName(loop.pollerKind()) << ")" << std::endl;
    loop.loop();
  } catch (const std::system_error& e) {
    std::cerr << program.name << ": " << e.what() << "\n";
    return 1;
  } catch (const tls::Error& e) {
    std::cerr << program.name << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int serverMain(int argc, char* argv[], const ServerProgram& program) {
  const pingpong::Args args = pingpong::parseArgs(argc, argv, 3, /*acceptsLogDir=*/true,
                                                  /*acceptsCoro=*/false,
                                                  /*acceptsLoopTimings=*/true);
  if (const std::optional<int> exitStatus = checkOptions(args, program)) return *exitStatus;
  const auto port = InetAddress::parsePort(args.positional[1]);
  const auto threads = pingpong::parseNumber(args.positional[2], 0, 256);
  const auto address = port ? InetAddress::parse(args.positional[0], *port) : std::nullopt;
  if (!address || !threads) {
    std::cerr << program.name << ": bad address, port or thread count\n" << usage(program);
    return 2;
  }
  if (!args.logDir.empty() && !std::filesystem::is_directory(args.logDir)) {
    std::cerr << program.name << ": log directory '" << args.logDir << "' is not a directory\n";
    return 2;
  }
  // Outlives the server so its shutdown lines reach the file; the destructor
  // drains and stops the back end.
  std::shared_ptr<LogFile> logFile;
  if (!args.logDir.empty()) {
    logFile = std::make_shared<LogFile>(args.logDir, program.name);
    if (const int err = logFile->openError()) {
      std::cerr << program.name << ": cannot write a log file in '" << args.logDir
                << "': " << std::strerror(err) << "\n";
      return 2;
    }
  }
  const std::unique_ptr<AsyncLogging> asyncLog = startFileLog(std::move(logFile));
  return serve(args, program, *address, static_cast<int>(*threads));
}

}  // namespace libnet::pingpong
