#include "bench/dns/ResolveBenchArgs.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "pingpong/CommandLine.h"

namespace dnsbench {
namespace {

constexpr const char* kDefaultPattern = "host%d.bench.test";
// The names are made up front (a pending lookup refers to its name), so
// their number is capped: a million distinct names defeat any cache.
constexpr uint64_t kMaxDistinct = 1'000'000;

void printUsage(FILE* out, const ResolveBenchOptions& options) {
  std::fprintf(out,
               "usage: %.*s --count N --inflight K [--names FILE | --name-pattern P "
               "--distinct D]%s%s\n"
               "  Resolves N names, K at a time, and prints lookups= failed= seconds=\n"
               "  lookups_per_s= cpu_s= threads=. Lookup i asks for line i %% lines of FILE, or\n"
               "  for P with %%d replaced by i %% D (default %s, D = N, at most %llu).\n",
               static_cast<int>(options.program.size()), options.program.data(),
               options.threads ? " [--threads T]" : "",
               options.server ? " [--server ADDR:PORT] [--backend B]" : "", kDefaultPattern,
               static_cast<unsigned long long>(kMaxDistinct));
}

[[noreturn]] void usageError(const ResolveBenchOptions& options, const std::string& message) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(options.program.size()),
               options.program.data(), message.c_str());
  printUsage(stderr, options);
  std::exit(2);
}

std::string expand(const std::string& pattern, uint64_t i) {
  const size_t at = pattern.find("%d");
  if (at == std::string::npos) return pattern;
  return pattern.substr(0, at) + std::to_string(i) + pattern.substr(at + 2);
}

// The names of a --names file, one a line; a usage error if there are none.
std::vector<std::string> readNames(const ResolveBenchOptions& options, const std::string& file) {
  std::ifstream in(file);
  if (!in) usageError(options, "cannot read --names file " + file);
  std::vector<std::string> names;
  for (std::string name; std::getline(in, name);) {
    if (!name.empty()) names.push_back(name);
  }
  if (names.empty()) usageError(options, "--names file " + file + " has no names");
  return names;
}

}  // namespace

ResolveBenchArgs parseResolveBenchArgs(int argc, char** argv, const ResolveBenchOptions& options) {
  std::string count, inflight, namesFile, pattern, distinct, threads, server, backend;
  std::vector<cmdline::Option> known = {{"--count", &count},
                                        {"--inflight", &inflight},
                                        {"--names", &namesFile},
                                        {"--name-pattern", &pattern},
                                        {"--distinct", &distinct}};
  if (options.threads) known.push_back({"--threads", &threads});
  if (options.server) {
    known.push_back({"--server", &server});
    known.push_back({"--backend", &backend});
  }
  const cmdline::CommandLine line = cmdline::parseCommandLine(argc, argv, known);
  if (line.help) {
    printUsage(stdout, options);
    std::exit(0);
  }
  if (!line.error.empty()) usageError(options, line.error);
  if (!line.positional.empty()) usageError(options, "unexpected argument " + line.positional[0]);

  ResolveBenchArgs args;
  args.server = server;
  args.backend = backend;
  if (!count.empty()) {
    const auto n = cmdline::parseNumber(count, 1, 100'000'000);
    if (!n) usageError(options, "bad --count: " + count);
    args.count = static_cast<uint64_t>(*n);
  }
  if (!inflight.empty()) {
    const auto n = cmdline::parseNumber(inflight, 1, 100'000);
    if (!n) usageError(options, "bad --inflight: " + inflight);
    args.inflight = static_cast<int>(*n);
  }
  if (!threads.empty()) {
    const auto n = cmdline::parseNumber(threads, 1, 1024);
    if (!n) usageError(options, "bad --threads: " + threads);
    args.threads = static_cast<int>(*n);
  }
  if (!namesFile.empty()) {
    if (!pattern.empty() || !distinct.empty()) {
      usageError(options, "--names excludes --name-pattern and --distinct");
    }
    args.names = readNames(options, namesFile);
    return args;
  }
  if (pattern.empty()) pattern = kDefaultPattern;
  uint64_t d = std::min(args.count, kMaxDistinct);
  if (!distinct.empty()) {
    const auto n = cmdline::parseNumber(distinct, 1, static_cast<long>(kMaxDistinct));
    if (!n) usageError(options, "bad --distinct: " + distinct);
    d = static_cast<uint64_t>(*n);
  }
  args.names.reserve(d);
  for (uint64_t i = 0; i < d; ++i) args.names.push_back(expand(pattern, i));
  return args;
}

}  // namespace dnsbench
