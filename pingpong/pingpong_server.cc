// pingpong_server: the server side of the muduo book's ping-pong benchmark on
// libnet. It echoes every byte it receives, with TCP_NODELAY, on <threads> I/O
// loops (0: everything on the accepting loop). SIGINT/SIGTERM stop it.
//
//   pingpong_server [--backend epoll|uring|auto] [--log-dir DIR] <address> <port> <threads>

#include <filesystem>
#include <iostream>
#include <memory>
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
#include "pingpong/Args.h"

using namespace libnet;

namespace {

constexpr const char* kUsage =
    "usage: pingpong_server [--backend epoll|uring|auto] [--log-dir DIR] <address> <port> "
    "<threads>\n"
    "  Echoes everything it receives. <threads> I/O loops (0: all on the main loop).\n"
    "  Prints \"listening on ADDR:PORT\" when ready; SIGINT/SIGTERM stop it.\n"
    "  The LIBNET_POLLER environment variable overrides --backend.\n"
    "  --log-dir DIR logs asynchronously to files in DIR instead of stderr.\n";

}  // namespace

int main(int argc, char* argv[]) {
  const pingpong::Args args = pingpong::parseArgs(argc, argv, 3, /*acceptsLogDir=*/true);
  if (args.help) {
    std::cout << kUsage;
    return 0;
  }
  if (!args.error.empty()) {
    std::cerr << "pingpong_server: " << args.error << "\n" << kUsage;
    return 2;
  }
  const auto port = InetAddress::parsePort(args.positional[1]);
  const auto threads = pingpong::parseNumber(args.positional[2], 0, 256);
  const auto address = port ? InetAddress::parse(args.positional[0], *port) : std::nullopt;
  if (!address || !threads) {
    std::cerr << "pingpong_server: bad address, port or thread count\n" << kUsage;
    return 2;
  }

  if (!args.logDir.empty() && !std::filesystem::is_directory(args.logDir)) {
    std::cerr << "pingpong_server: log directory '" << args.logDir << "' is not a directory\n";
    return 2;
  }
  // Before any thread exists, the log writer's included: every thread
  // inherits the mask, so SIGINT/SIGTERM stay pending for the signalfd (a
  // clean stop, every line written) instead of killing the process.
  try {
    QuitOnSignal::blockStopSignals();
  } catch (const std::system_error& e) {
    std::cerr << "pingpong_server: " << e.what() << "\n";
    return 1;
  }
  // Outlives the server so its shutdown lines reach the file; the destructor
  // drains and stops the back end.
  std::unique_ptr<AsyncLogging> asyncLog;
  if (!args.logDir.empty()) {
    asyncLog = std::make_unique<AsyncLogging>(
        AsyncLogging::fileSink(std::make_shared<LogFile>(args.logDir, "pingpong_server")));
    asyncLog->start();
    asyncLog->installAsDefaultSink();
  }

  try {
    EventLoop loop(args.backend);
    TcpServer server(&loop, *address, "pingpong");
    server.setThreadNum(static_cast<int>(*threads));
    server.setTcpNoDelay(true);
    server.setMessageCallback(
        [](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) { conn->send(buffer); });
    server.start();
    QuitOnSignal quitOnSignal(&loop);
    std::cout << "listening on " << server.listenAddress().toIpPort() << " ("
              << pollerKindName(loop.pollerKind()) << ")" << std::endl;
    loop.loop();
  } catch (const std::system_error& e) {
    std::cerr << "pingpong_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
