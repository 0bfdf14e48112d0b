// resolve_bench: lookups per second of dns::Resolver (c-ares on one
// EventLoop, no thread) against a name server, keeping K lookups in flight.
//
//   resolve_bench --server ADDR:PORT [--backend B] --count N --inflight K
//                 [--names FILE | --name-pattern host%d.bench.test --distinct D]
//                 [--cache ENTRIES]
//
// Each lookup asks for both families (A and AAAA, as getaddrinfo() with
// AF_UNSPEC does), with the resolver's defaults otherwise (/etc/hosts read
// first, RFC 6724 order), so that the getaddrinfo-based peers of the
// benchmark (bench/dns/) do the same work. The names are those of FILE (one
// a line) or the pattern with %d replaced by 0..D-1, taken in turn.
//
// Prints the line of bench/dns/ProcessMeter.h (lookups, failures, seconds,
// lookups/s, the process's CPU time and threads) and exits 0; failures are
// counted in the line, as the peers count theirs.

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/dns/ProcessMeter.h"
#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/NameResolver.h"
#include "net/dns/Resolver.h"

namespace {

using libnet::NameResolver;
using libnet::ResolveResult;

constexpr std::string_view kUsage =
    "usage: resolve_bench --server ADDR:PORT [--backend B] --count N --inflight K\n"
    "                     [--names FILE | --name-pattern PATTERN --distinct D]\n"
    "\n"
    "Runs N lookups (A and AAAA) keeping K in flight, against the name server at\n"
    "ADDR:PORT, and prints: lookups=N failed=F seconds=S lookups_per_s=X cpu_s=C\n"
    "\n"
    "  --names FILE          names to look up, one a line, taken in turn\n"
    "  --name-pattern P      names made of P with %d replaced by 0..D-1\n"
    "                        (default host%d.bench.test)\n"
    "  --distinct D          how many names the pattern makes (default N)\n"
    "  --cache ENTRIES       the resolver's TTL cache, ENTRIES names (default 0: off;\n"
    "                        the peers have none)\n";

struct Options {
  std::optional<libnet::InetAddress> server;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  int count = 0;
  int inflight = 0;
  std::string namesFile;
  std::string pattern = "host%d.bench.test";
  int distinct = 0;
  int cacheEntries = 0;
};

std::optional<int> parseArgs(int argc, char* argv[], Options* options) {
  libnet::Flags flags("resolve_bench", std::string(kUsage));
  flags.addAddressPort("--server", &options->server);
  flags.addBackend("--backend", &options->backend);
  flags.addInt("--count", &options->count, 1, 100'000'000);
  flags.addInt("--inflight", &options->inflight, 1, 100'000);
  flags.addFile("--names", &options->namesFile);
  flags.addCustom("--name-pattern", [options](std::string_view value) {
    if (value.find("%d") == std::string_view::npos) return std::string("no %d in the pattern");
    options->pattern = std::string(value);
    return std::string();
  });
  flags.addInt("--distinct", &options->distinct, 1, 100'000'000);
  flags.addInt("--cache", &options->cacheEntries, 0, 10'000'000);
  if (std::optional<int> exitStatus = flags.parse(argc, argv)) return exitStatus;
  if (!options->server || options->count == 0 || options->inflight == 0) {
    std::cerr << "resolve_bench: --server, --count and --inflight are needed\n" << kUsage;
    return libnet::Flags::kExitUsage;
  }
  return std::nullopt;
}

std::vector<std::string> makeNames(const Options& options) {
  std::vector<std::string> names;
  if (!options.namesFile.empty()) {
    std::ifstream in(options.namesFile);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) names.push_back(line);
    }
    return names;
  }
  const int distinct = options.distinct > 0 ? options.distinct : options.count;
  const size_t at = options.pattern.find("%d");
  for (int i = 0; i < distinct; ++i) {
    std::string name = options.pattern;
    names.push_back(name.replace(at, 2, std::to_string(i)));
  }
  return names;
}

// The run: K slots, each starting its next lookup when the last one ends.
struct Run {
  libnet::EventLoop* loop;
  NameResolver* resolver;
  const std::vector<std::string>& names;
  int count;
  int started = 0;
  int done = 0;
  int failed = 0;
  std::vector<NameResolver::QueryPtr> slots;

  void start(size_t slot) {
    const std::string& name = names[static_cast<size_t>(started) % names.size()];
    ++started;
    slots[slot] = resolver->lookup(name, 0, NameResolver::Family::kAny,
                                   [this, slot](ResolveResult result) { finished(slot, result); });
  }

  void finished(size_t slot, const ResolveResult& result) {
    ++done;
    if (!result.ok() && ++failed <= 3)
      std::cerr << "resolve_bench: " << result.error.message << "\n";
    if (started < count) {
      start(slot);
    } else if (done == count) {
      loop->quit();
    }
  }
};

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  if (const std::optional<int> exitStatus = parseArgs(argc, argv, &options)) return *exitStatus;
  const std::vector<std::string> names = makeNames(options);
  if (names.empty()) {
    std::cerr << "resolve_bench: no names\n";
    return libnet::Flags::kExitUsage;
  }
  libnet::EventLoop loop(options.backend);
  libnet::dns::Resolver::Options resolverOptions;
  resolverOptions.servers = {*options.server};
  resolverOptions.cacheEntries = static_cast<size_t>(options.cacheEntries);
  libnet::dns::Resolver resolver(&loop, resolverOptions);
  Run run{&loop, &resolver, names, options.count};
  run.slots.resize(static_cast<size_t>(std::min(options.inflight, options.count)));

  // The same result line as the peers' (threads included), and exit 0 with
  // failures counted in it, as they do.
  dnsbench::ProcessMeter meter;
  meter.start();
  for (size_t slot = 0; slot < run.slots.size(); ++slot) run.start(slot);
  loop.loop();
  meter.finish(static_cast<uint64_t>(run.done), static_cast<uint64_t>(run.failed));
  return 0;
}
