// greeter_client: calls helloworld.Greeter/SayHello (examples/grpc/protos/
// helloworld.proto) through libnet's gRPC client, in coroutine style, and
// prints the reply.
//
//   greeter_client [--target HOST:PORT] [--name NAME] [--count N]
//                  [--tls] [--ca-file FILE] [--server-name NAME]
//                  [--timeout-ms N] [--backend epoll|uring|auto]
//
// Without --tls it speaks h2c (HTTP/2 with prior knowledge); with it, TLS
// with ALPN "h2", the server's certificate checked against --ca-file (or the
// system's roots) and --server-name (default: the target's host). Exit 0
// when every call was OK, 1 when one failed (its status printed), 2 on bad
// flags.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "examples/common/Flags.h"
#include "examples/grpc/protos/helloworld.libnet.h"
#include "net/EventLoop.h"
#include "net/coro/Spawn.h"
#include "net/coro/Task.h"
#include "net/grpc/Channel.h"
#include "net/tls/TlsContext.h"

namespace {

using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;
using libnet::coro::Task;

struct Settings {
  std::string target = "localhost:50051";
  std::string name = "world";
  int count = 1;
  int timeoutMs = 10000;
  bool tls = false;
  std::string caFile;
  std::string serverName;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
};

const char kUsage[] =
    "usage: greeter_client [--target HOST:PORT] [--name NAME] [--count N] [--tls]\n"
    "                      [--ca-file FILE] [--server-name NAME] [--timeout-ms N]\n"
    "                      [--backend epoll|uring|auto]\n"
    "  --target T       the server: host:port, dns:///host:port, [v6]:port\n"
    "                   (default localhost:50051)\n"
    "  --name NAME      the name to greet (default world)\n"
    "  --count N        calls, one after the other (default 1)\n"
    "  --tls            TLS with ALPN h2 (default: h2c)\n"
    "  --ca-file FILE   PEM roots to check the server with (default: the system's)\n"
    "  --server-name N  the name checked and sent as SNI and :authority\n"
    "  --timeout-ms N   each call's deadline (default 10000)\n"
    "  --backend B      poller: epoll, uring or auto (default)\n";

std::optional<int> parseFlags(int argc, char* argv[], Settings* settings) {
  libnet::Flags flags("greeter_client", kUsage);
  flags.addCustom("--target", [settings](std::string_view value) -> std::string {
    if (value.empty()) return "an empty target";
    settings->target = std::string(value);
    return {};
  });
  flags.addCustom("--name", [settings](std::string_view value) -> std::string {
    settings->name = std::string(value);
    return {};
  });
  flags.addInt("--count", &settings->count, 1, 1000000);
  flags.addInt("--timeout-ms", &settings->timeoutMs, 1, 3600 * 1000);
  flags.addSwitch("--tls", &settings->tls);
  flags.addFile("--ca-file", &settings->caFile);
  flags.addCustom("--server-name", [settings](std::string_view value) -> std::string {
    settings->serverName = std::string(value);
    return {};
  });
  flags.addBackend("--backend", &settings->backend);
  if (std::optional<int> exit = flags.parse(argc, argv)) return exit;
  if (!settings->tls && (!settings->caFile.empty() || !settings->serverName.empty())) {
    std::fprintf(stderr, "greeter_client: --ca-file and --server-name need --tls\n");
    return libnet::Flags::kExitUsage;
  }
  return std::nullopt;
}

Task<> greet(Greeter::Stub stub, Settings settings, int* exitCode, libnet::EventLoop* loop) {
  HelloRequest request;
  request.set_name(settings.name);
  for (int i = 0; i < settings.count; ++i) {
    libnet::grpc::Result<HelloReply> reply =
        co_await stub.SayHello(request, {.timeout = std::chrono::milliseconds(settings.timeoutMs)});
    if (!reply.ok()) {
      std::fprintf(stderr, "greeter_client: %s\n", reply.status().toString().c_str());
      *exitCode = 1;
      break;
    }
    std::printf("%s\n", reply->message().c_str());
  }
  loop->quit();
}

int run(const Settings& settings) {
  libnet::EventLoop loop(settings.backend);
  libnet::grpc::Channel::Options options;
  if (settings.tls) {
    options.tls = libnet::tls::Context::newClient({.caFile = settings.caFile, .alpn = {"h2"}});
    options.serverNameOverride = settings.serverName;
  }
  std::shared_ptr<libnet::grpc::Channel> channel;
  try {
    channel = libnet::grpc::Channel::create(&loop, settings.target, options);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "greeter_client: %s\n", e.what());
    return libnet::Flags::kExitUsage;
  }
  int exitCode = 0;
  libnet::coro::spawn(&loop, greet(Greeter::Stub(channel), settings, &exitCode, &loop));
  loop.loop();
  return exitCode;
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  if (std::optional<int> exit = parseFlags(argc, argv, &settings)) return *exit;
  try {
    return run(settings);
  } catch (const libnet::tls::Error& e) {
    std::fprintf(stderr, "greeter_client: TLS: %s\n", e.what());
    return 1;
  }
}
