#include "bench/udp/ServerArgs.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "pingpong/CommandLine.h"

namespace udpbench {
namespace {

void printUsage(FILE* out, const ServerOptions& options) {
  std::fprintf(out, "usage: %.*s --port P [--address A]%s [--sink]%s\n",
               static_cast<int>(options.program.size()), options.program.data(),
               options.threads ? " [--threads N]" : "", options.batch ? " [--batch B]" : "");
  std::fprintf(out,
               "  Echoes every datagram to its sender (--sink: counts them, echoes none) until\n"
               "  SIGINT or SIGTERM, then prints received=N bytes=M echoed=K dropped=D.\n"
               "  --address defaults to 127.0.0.1; port 0 lets the kernel choose.\n");
}

[[noreturn]] void usageError(const ServerOptions& options, const std::string& message) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(options.program.size()),
               options.program.data(), message.c_str());
  printUsage(stderr, options);
  std::exit(2);
}

}  // namespace

ServerArgs parseServerArgs(int argc, char** argv, const ServerOptions& options) {
  std::string port;
  std::string address;
  std::string threads;
  std::string batch;
  bool sink = false;
  std::vector<cmdline::Option> known = {
      {"--port", &port}, {"--address", &address}, {"--sink", nullptr, &sink}};
  if (options.threads) known.push_back({"--threads", &threads});
  if (options.batch) known.push_back({"--batch", &batch});

  const cmdline::CommandLine line = cmdline::parseCommandLine(argc, argv, known);
  if (line.help) {
    printUsage(stdout, options);
    std::exit(0);
  }
  if (!line.error.empty()) usageError(options, line.error);
  if (!line.positional.empty()) usageError(options, "unexpected argument " + line.positional[0]);

  ServerArgs args;
  args.sink = sink;
  if (port.empty()) usageError(options, "missing --port");
  const auto p = cmdline::parseNumber(port, 0, 65535);
  if (!p) usageError(options, "bad --port: " + port);
  args.port = static_cast<uint16_t>(*p);
  if (!address.empty()) args.address = address;
  sockaddr_storage ignored;
  socklen_t length = 0;
  if (!toSockaddr(args.address, args.port, &ignored, &length)) {
    usageError(options, "bad --address (want a numeric IPv4 or IPv6 address): " + args.address);
  }
  if (!threads.empty()) {
    const auto t = cmdline::parseNumber(threads, 1, 256);
    if (!t) usageError(options, "bad --threads: " + threads + " (want 1..256)");
    args.threads = static_cast<int>(*t);
  }
  if (!batch.empty()) {
    const auto b = cmdline::parseNumber(batch, 1, 1024);
    if (!b) usageError(options, "bad --batch: " + batch + " (want 1..1024)");
    args.batch = static_cast<int>(*b);
  }
  return args;
}

bool toSockaddr(const std::string& address, uint16_t port, sockaddr_storage* out,
                socklen_t* length) {
  *out = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    *length = sizeof(sockaddr_in);
    return true;
  }
  *out = {};
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    *length = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

std::string formatEndpoint(std::string_view address, uint16_t port) {
  const std::string host = address.find(':') != std::string_view::npos
                               ? "[" + std::string(address) + "]"
                               : std::string(address);
  return host + ":" + std::to_string(port);
}

void printStopLine(const ServerCounters& c) {
  std::printf("received=%" PRIu64 " bytes=%" PRIu64 " echoed=%" PRIu64 " dropped=%" PRIu64 "\n",
              c.received, c.bytes, c.echoed, c.dropped);
  std::fflush(stdout);
}

}  // namespace udpbench
