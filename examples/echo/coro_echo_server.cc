// coro_echo_server: echo_server written with the coroutine layer
// (net/coro/): each connection is one coroutine that reads whatever arrived
// and writes it back. Its idle kick is a timeout around the read (no timing
// wheel): a client that sends nothing for --idle-timeout seconds is told so
// and disconnected. A client that does not read its echo suspends the
// coroutine at the stream's write high-water mark (1 MiB), and the stream
// then stops reading from it: memory stays bounded.
//
// SIGINT / SIGTERM stop it cleanly (exit 0); 1 if the server cannot be set
// up (port in use, permission denied), 2 for bad command-line arguments.

#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "base/Logging.h"
#include "examples/common/CpuAffinityFlag.h"
#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"

namespace {

using namespace libnet;
using namespace std::chrono_literals;

constexpr std::string_view kUsage =
    "usage: coro_echo_server [--address ADDR] [--port N] [--threads N] [--backend B]\n"
    "                        [--idle-timeout SECONDS] [--unix PATH] [--cpu-affinity LIST]\n"
    "\n"
    "  --address ADDR  numeric IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --port N        TCP port, 0..65535; 0 picks a free one (default 2007)\n"
    "  --unix PATH     listen on a Unix domain socket at PATH instead (\"@NAME\": the\n"
    "                  abstract name NAME); a stale socket file there is replaced\n"
    "  --threads N     I/O loop threads; 0 serves everything on the main thread (default 0)\n"
    "  --backend B     epoll, uring or auto (default auto)\n"
    "  --idle-timeout SECONDS\n"
    "                  disconnect a client that sends nothing for SECONDS; 0: never (default)\n"
    "  --help          print this help and exit\n";

constexpr std::string_view kUsageTail =
    "\n"
    "Prints \"coro_echo_server listening on IP:PORT\" (or unix:PATH) once ready. SIGINT or\n"
    "SIGTERM stops it.\n";

// One connection, start to end: echo(), or echoUntilIdle() with
// --idle-timeout. Two coroutines rather than one loop with a branch: a
// coroutine's frame holds every awaitable its body may use, so with the
// timeout in the loop every connection carried its awaitable (a 728-byte
// frame against 296: docs/benchmarks.md, "Memory per idle connection").
coro::Task<> echo(coro::Stream stream) {
  while (coro::Input in = co_await stream.read()) {
    if (co_await stream.write(&*in) != coro::Errc::kOk) co_return;
  }
  // The peer closed (its echo is all out), or an error.
}

coro::Task<> echoUntilIdle(coro::Stream stream, Duration idleTimeout) {
  for (;;) {
    coro::Input in = co_await coro::withTimeout(idleTimeout, stream.read());
    if (in.error() == coro::Errc::kTimedOut) {
      LOG_INFO << stream.connection()->name() << " idle too long, disconnecting";
      co_await stream.write("idle timeout\n");
      co_return;  // the connection closes once the line is out
    }
    if (!in) co_return;  // the peer closed (its echo is all out), or an error
    if (co_await stream.write(&*in) != coro::Errc::kOk) co_return;
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  std::string address = "0.0.0.0";
  uint16_t port = 2007;
  std::optional<SocketAddress> unixSocket;
  int threads = 0;
  int idleSeconds = 0;
  PollerKind backend = PollerKind::kAuto;
  CpuAffinityFlag cpuAffinity;
  const std::string usage = std::string(kUsage) + CpuAffinityFlag::kUsage + std::string(kUsageTail);
  Flags flags("coro_echo_server", usage);
  flags.addAddress("--address", &address);
  flags.addPort("--port", &port);
  flags.addUnixSocket("--unix", &unixSocket);
  flags.exclude("--unix", "--address");
  flags.exclude("--unix", "--port");
  flags.addInt("--threads", &threads, 0, 1024);
  flags.addBackend("--backend", &backend);
  flags.addInt("--idle-timeout", &idleSeconds, 0, 86400);
  cpuAffinity.addTo(&flags);
  if (const std::optional<int> exitStatus = flags.parse(argc, argv)) return *exitStatus;
  if (const std::string problem = cpuAffinity.check(threads); !problem.empty()) {
    std::cerr << "coro_echo_server: " << problem << " (see --help)\n";
    return Flags::kExitUsage;
  }

  try {
    EventLoop loop(backend);
    SignalSet stop(&loop, {SIGINT, SIGTERM}, [&loop](int) { loop.quit(); });
    const SocketAddress listenAddr =
        unixSocket ? *unixSocket : SocketAddress(*InetAddress::parse(address, port));
    TcpServer server(&loop, listenAddr, "coro-echo",
                     {.threads = threads, .cpuAffinity = cpuAffinity.ioLoopCpus()});
    const Duration idleTimeout = std::chrono::seconds(idleSeconds);
    coro::serve(server, [idleTimeout](coro::Stream stream) {
      return idleTimeout > Duration::zero() ? echoUntilIdle(std::move(stream), idleTimeout)
                                            : echo(std::move(stream));
    });
    server.start();
    if (const std::string pinned = cpuAffinity.pinMainLoop(); !pinned.empty()) {
      std::cout << "coro_echo_server: " << pinned << "\n";
    }
    std::cout << "coro_echo_server listening on " << server.listenAddress().toIpPort() << std::endl;
    loop.loop();
  } catch (const std::system_error& e) {
    std::cerr << "coro_echo_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
