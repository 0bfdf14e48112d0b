// ws_echo_server: a WebSocket echo server on libnet (net/websocket/). Every
// message comes back with its type (text or binary); pings are answered by
// the library. Any path is accepted; a plain HTTP request gets 426 asking
// for the upgrade. The WebSocket benchmarks and tests run it.
//
// Echoes are written straight from the received payload into the
// connection's output (no copy of the message of its own), the frames made
// while one read is handled go out in one write, and TCP_NODELAY is on.
// Back-pressure: a client that sends without reading is not read from while
// more than --max-queued-output bytes wait to be written to it.
//
// SIGINT / SIGTERM stop it cleanly (exit 0); 1 if it cannot be set up, 2 for
// bad arguments.

#include <chrono>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include "examples/common/CpuAffinityFlag.h"
#include "examples/common/Flags.h"
#include "examples/common/ServerTls.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/http/HttpServer.h"
#include "net/tls/TlsContext.h"
#include "net/websocket/WebSocketServer.h"

namespace {

using namespace libnet;

constexpr int kExitSetupError = 1;

constexpr const char* kUsageHead =
    "usage: ws_echo_server [--address ADDR] [--port N] [--backend B] [--threads N]\n"
    "                      [--tls-cert F --tls-key F] [--deflate] [--max-message BYTES]\n"
    "                      [--max-queued-output BYTES]\n"
    "\n"
    "  --address ADDR      numeric IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --port N            TCP port, 0..65535; 0 picks a free one (default 8080)\n"
    "  --backend B         epoll, uring or auto (default auto)\n"
    "  --threads N         I/O loop threads; 0 serves everything on the main thread (default 0)\n"
    "  --deflate           accept permessage-deflate (RFC 7692) when the client offers it\n"
    "  --max-message BYTES the largest message accepted (default 16777216); 1009 past it\n"
    "  --max-queued-output BYTES  per-connection output limit (default 1048576)\n";
constexpr const char* kUsageTail =
    "  --help              print this help and exit\n"
    "\n"
    "Prints \"ws_echo_server listening on IP:PORT\" once ready. SIGINT or SIGTERM stops it.\n";

struct Settings {
  std::string address = "0.0.0.0";
  uint16_t port = 8080;
  PollerKind backend = PollerKind::kAuto;
  int threads = 0;
  bool deflate = false;
  int maxMessage = 16 * 1024 * 1024;
  int maxQueuedOutput = 1024 * 1024;
  ServerTls tls;
  CpuAffinityFlag cpuAffinity;
};

void echo(const ws::WebSocketPtr& ws, ws::MessageType type, std::string_view payload) {
  // kFull needs nothing here: the connection has stopped reading by itself,
  // so no more messages (and echoes) come until the client reads.
  (void)ws->send(type, payload);
}

void serve(const Settings& settings) {
  EventLoop loop(settings.backend);
  // Before the server's threads: a signal from here on stops it cleanly.
  SignalSet stop(&loop, {SIGINT, SIGTERM}, [&loop](int) { loop.quit(); });
  http::HttpServer server(&loop, *InetAddress::parse(settings.address, settings.port), "ws-echo",
                          {.threads = settings.threads,
                           .cpuAffinity = settings.cpuAffinity.ioLoopCpus(),
                           .layer = settings.tls.layer(),
                           .idleTimeout = Duration::zero(),
                           .maxQueuedOutput = static_cast<size_t>(settings.maxQueuedOutput)});
  server.setHandler([](const http::HttpRequest&, http::HttpResponse* response) {
    response->setStatusPage(426);
    response->addHeader("Upgrade", "websocket");
  });
  ws::Options options;
  options.maxMessageBytes = static_cast<size_t>(settings.maxMessage);
  options.maxFrameBytes = options.maxMessageBytes;
  options.deflate.enabled = settings.deflate;
  ws::serve(server, "", options, {.onMessage = echo});
  server.start();
  if (const std::string pinned = settings.cpuAffinity.pinMainLoop(); !pinned.empty()) {
    std::cout << "ws_echo_server: " << pinned << "\n";
  }
  std::cout << "ws_echo_server listening on " << server.listenAddress().toIpPort() << std::endl;
  loop.loop();
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  const std::string usage =
      std::string(kUsageHead) + ServerTls::kUsage + CpuAffinityFlag::kUsage + kUsageTail;
  Flags flags("ws_echo_server", usage);
  flags.addAddress("--address", &settings.address);
  flags.addPort("--port", &settings.port);
  flags.addBackend("--backend", &settings.backend);
  flags.addInt("--threads", &settings.threads, 0, 1024);
  flags.addSwitch("--deflate", &settings.deflate);
  flags.addInt("--max-message", &settings.maxMessage, 1, 1 << 30);
  flags.addInt("--max-queued-output", &settings.maxQueuedOutput, 0, 1 << 30);
  settings.tls.addTo(&flags);
  settings.cpuAffinity.addTo(&flags);
  if (const std::optional<int> exitStatus = flags.parse(argc, argv)) return *exitStatus;
  if (const std::string problem = settings.tls.check(); !problem.empty()) {
    std::cerr << "ws_echo_server: " << problem << "\n" << usage;
    return Flags::kExitUsage;
  }
  if (const std::string problem = settings.cpuAffinity.check(settings.threads); !problem.empty()) {
    std::cerr << "ws_echo_server: " << problem << " (see --help)\n";
    return Flags::kExitUsage;
  }
  try {
    serve(settings);
  } catch (const std::system_error& e) {
    std::cerr << "ws_echo_server: " << e.what() << "\n";
    return kExitSetupError;
  } catch (const std::invalid_argument& e) {
    std::cerr << "ws_echo_server: " << e.what() << "\n";
    return kExitSetupError;
  } catch (const tls::Error& e) {
    std::cerr << "ws_echo_server: " << e.what() << "\n";
    return kExitSetupError;
  }
  return 0;
}
