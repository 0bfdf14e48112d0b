// greeter_server: helloworld.Greeter (examples/grpc/protos/helloworld.proto)
// on libnet, in coroutine style: SayHello answers "Hello " + name. The server
// of the gRPC benchmark (bench/grpc/run_grpc_bench.py) beside grpc++'s and
// grpc-go's greeters.
//
//   greeter_server [--address IP] [--port N] [--backend epoll|uring|auto]
//                  [--threads N] [--tls-cert FILE --tls-key FILE] [--h2c]
//
// Without TLS it serves HTTP/2 with prior knowledge (h2c, what gRPC clients
// speak in plaintext; --h2c says so explicitly); with --tls-cert/--tls-key,
// h2 chosen by ALPN. --threads 0 (the default) is one loop for everything.
// Prints "greeter_server listening on IP:PORT" once it serves; SIGINT or
// SIGTERM drain it (calls in flight finish, at most 5 s). Bad flags: exit 2.
#include <csignal>
#include <cstdio>
#include <string>

#include "examples/common/Flags.h"
#include "examples/common/ServerTls.h"
#include "examples/grpc/protos/helloworld.libnet.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/grpc/CoroStream.h"
#include "net/grpc/Server.h"
#include "net/http/HttpServer.h"
#include "net/tls/TlsContext.h"

namespace {

using helloworld::HelloReply;
using helloworld::HelloRequest;
using libnet::coro::Task;
using libnet::grpc::CoroStream;
using libnet::grpc::Status;

class GreeterImpl : public helloworld::Greeter::CoroService {
 public:
  Task<Status> SayHello(CoroStream<HelloRequest, HelloReply>& call) override {
    HelloReply reply;
    reply.set_message("Hello " + call.request().name());
    co_await call.write(reply);
    co_return Status();
  }
};

struct Settings {
  std::string address = "127.0.0.1";
  uint16_t port = 50051;
  int threads = 0;
  bool h2c = false;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  libnet::ServerTls tls;
};

const char kUsage[] =
    "usage: greeter_server [--address IP] [--port N] [--backend epoll|uring|auto]\n"
    "                      [--threads N] [--tls-cert FILE --tls-key FILE] [--h2c]\n"
    "  --address IP     listen on this numeric address (default 127.0.0.1)\n"
    "  --port N         TCP port (default 50051; 0 picks one)\n"
    "  --backend B      poller: epoll, uring or auto (default)\n"
    "  --threads N      I/O loops besides the accepting one (default 0: one loop)\n"
    "  --h2c            HTTP/2 with prior knowledge on plain TCP (the default\n"
    "                   without TLS)\n";

// nullopt: go on; otherwise the exit status.
std::optional<int> parseFlags(int argc, char* argv[], Settings* settings) {
  libnet::Flags flags("greeter_server", std::string(kUsage) + libnet::ServerTls::kUsage);
  flags.addAddress("--address", &settings->address);
  flags.addPort("--port", &settings->port);
  flags.addBackend("--backend", &settings->backend);
  flags.addInt("--threads", &settings->threads, 0, 64);
  flags.addSwitch("--h2c", &settings->h2c);
  settings->tls.addTo(&flags);
  if (std::optional<int> exit = flags.parse(argc, argv)) return exit;
  if (std::string problem = settings->tls.check(); !problem.empty()) {
    std::fprintf(stderr, "greeter_server: %s\n", problem.c_str());
    return libnet::Flags::kExitUsage;
  }
  if (settings->h2c && settings->tls.enabled()) {
    std::fprintf(stderr, "greeter_server: --h2c is for plain TCP, not with --tls-cert\n");
    return libnet::Flags::kExitUsage;
  }
  return std::nullopt;
}

int serve(const Settings& settings) {
  libnet::EventLoop loop(settings.backend);
  libnet::http::HttpServer::Options options;
  options.threads = settings.threads;
  options.layer = settings.tls.layer({"h2"});
  libnet::http::HttpServer http(&loop, *libnet::InetAddress::parse(settings.address, settings.port),
                                "greeter", options);
  libnet::grpc::Server server(http, {});
  GreeterImpl greeter;
  server.addService(&greeter);
  libnet::SignalSet signals(&loop, {SIGINT, SIGTERM}, [&](int) {
    http.drain(std::chrono::seconds(5), [&loop] { loop.quit(); });
  });
  http.start();
  std::printf("greeter_server listening on %s\n", http.listenAddress().toIpPort().c_str());
  std::fflush(stdout);
  loop.loop();
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  if (std::optional<int> exit = parseFlags(argc, argv, &settings)) return *exit;
  try {
    return serve(settings);
  } catch (const libnet::tls::Error& e) {
    std::fprintf(stderr, "greeter_server: TLS: %s\n", e.what());
    return 1;
  }
}
