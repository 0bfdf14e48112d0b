// resolve: looks host names up with dns::Resolver on one EventLoop, all at
// once, and prints every address found, one per line as "NAME ADDRESS" (both
// families, in the order of the arguments).
//
//   resolve [--server ADDR:PORT] [--backend B] [--timeout-ms N] NAME...
//
// Exits 0 if every name resolved, 1 if any did not, with "NAME: REASON" on
// stderr (e.g. "no.such.test: NXDOMAIN"), and 2 on bad arguments. Without
// --server the name servers of /etc/resolv.conf are asked, and /etc/hosts
// is read first, as c-ares does. --timeout-ms bounds the whole run: a name
// still unanswered then is reported as "NAME: timeout".

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/NameResolver.h"
#include "net/dns/Resolver.h"

namespace {

using libnet::EventLoop;
using libnet::NameResolver;
using libnet::ResolveErrc;
using libnet::ResolveResult;

constexpr std::string_view kUsage =
    "usage: resolve [--server ADDR:PORT] [--backend B] [--timeout-ms N] NAME...\n"
    "\n"
    "Looks every NAME up (A and AAAA, all at once) and prints \"NAME ADDRESS\"\n"
    "per address found. Exits 0 if all resolved, 1 if any failed (\"NAME: REASON\"\n"
    "on stderr, e.g. \"no.such.test: NXDOMAIN\"), 2 on bad arguments.\n"
    "\n"
    "  --server ADDR:PORT  the name server to ask (numeric, e.g. 127.0.0.1:53 or\n"
    "                      [::1]:53); default: /etc/resolv.conf's, after /etc/hosts\n"
    "  --backend B         epoll | uring | auto (default auto)\n"
    "  --timeout-ms N      give up on what is unanswered after N ms (each try\n"
    "                      waits N/4 ms); default: c-ares's (resolv.conf's)\n";

struct Options {
  std::optional<libnet::InetAddress> server;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  int timeoutMs = 0;
  std::vector<std::string> names;
};

std::optional<int> parseArgs(int argc, char* argv[], Options* options) {
  libnet::Flags flags("resolve", std::string(kUsage));
  flags.addAddressPort("--server", &options->server);
  flags.addBackend("--backend", &options->backend);
  flags.addInt("--timeout-ms", &options->timeoutMs, 1, 3'600'000);
  flags.setPositional(&options->names);
  if (std::optional<int> exitStatus = flags.parse(argc, argv)) return exitStatus;
  if (options->names.empty()) {
    std::cerr << "resolve: no NAME given\n" << kUsage;
    return libnet::Flags::kExitUsage;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  if (const std::optional<int> exitStatus = parseArgs(argc, argv, &options)) return *exitStatus;
  EventLoop loop(options.backend);
  libnet::dns::Resolver::Options resolverOptions;
  if (options.server) resolverOptions.servers = {*options.server};
  if (options.timeoutMs > 0) {
    resolverOptions.timeout = std::chrono::milliseconds(std::max(1, options.timeoutMs / 4));
  }
  libnet::dns::Resolver resolver(&loop, resolverOptions);

  std::vector<std::optional<ResolveResult>> results(options.names.size());
  std::vector<NameResolver::QueryPtr> queries;
  size_t pending = options.names.size();
  for (size_t i = 0; i < options.names.size(); ++i) {
    queries.push_back(resolver.lookup(options.names[i], 0, NameResolver::Family::kAny,
                                      [&, i](ResolveResult result) {
                                        results[i] = std::move(result);
                                        if (--pending == 0) loop.quit();
                                      }));
  }
  if (options.timeoutMs > 0) {
    loop.runAfter(std::chrono::milliseconds(options.timeoutMs), [&loop] { loop.quit(); });
  }
  loop.loop();

  int exitCode = 0;
  for (size_t i = 0; i < options.names.size(); ++i) {
    const std::string& name = options.names[i];
    if (!results[i]) {
      std::cerr << name << ": " << libnet::resolveErrcName(ResolveErrc::kTimedOut) << "\n";
      exitCode = 1;
    } else if (!results[i]->ok()) {
      std::cerr << results[i]->error.message << "\n";
      exitCode = 1;
    } else {
      for (const libnet::InetAddress& address : results[i]->addresses) {
        std::cout << name << " " << address.toIp() << "\n";
      }
    }
  }
  return exitCode;
}
