// Command-line handling of libnet's ping-pong programs (pingpong_server,
// coro_pingpong_server, pingpong_client): "[--backend epoll|uring|auto]
// [--log-dir DIR] [--coro] [--tls-cert FILE --tls-key FILE | --tls-ca FILE]
// POSITIONAL..." with --help, split by the parser every ping-pong peer shares
// (pingpong/CommandLine.h); this layer turns --backend into a PollerKind and
// checks the number of positional arguments.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "net/PollerKind.h"
#include "pingpong/CommandLine.h"

namespace libnet::pingpong {

struct Args {
  PollerKind backend = PollerKind::kAuto;
  std::string logDir;  // empty: log to stderr
  bool coro = false;   // --coro: the coroutine layer instead of callbacks
  // --no-loop-timings (servers): EventLoopOptions::metrics off, for
  // measuring what the loops' timings cost (bench/metrics/).
  bool noLoopTimings = false;
  // TLS: a server's certificate chain and key, a client's CA file (each
  // turns TLS on); empty: plain TCP.
  std::string tlsCert;
  std::string tlsKey;
  std::string tlsCa;
  std::vector<std::string> positional;
  bool help = false;
  std::string error;  // non-empty: bad command line
};

using ::cmdline::parseNumber;

// acceptsLogDir / acceptsCoro / acceptsLoopTimings: whether --log-dir /
// --coro / --no-loop-timings is an option of this program. Every program takes the TLS options;
// which of them a program uses (and needs together) it checks itself.
inline Args parseArgs(int argc, char* argv[], size_t positionalCount, bool acceptsLogDir = false,
                      bool acceptsCoro = false, bool acceptsLoopTimings = false) {
  Args args;
  std::string backend;
  std::vector<::cmdline::Option> options = {{"--backend", &backend},
                                            {"--tls-cert", &args.tlsCert},
                                            {"--tls-key", &args.tlsKey},
                                            {"--tls-ca", &args.tlsCa}};
  if (acceptsLogDir) options.push_back({"--log-dir", &args.logDir});
  if (acceptsCoro) options.push_back({"--coro", nullptr, &args.coro});
  if (acceptsLoopTimings) options.push_back({"--no-loop-timings", nullptr, &args.noLoopTimings});
  ::cmdline::CommandLine line = ::cmdline::parseCommandLine(argc, argv, options);
  args.help = line.help;
  args.error = std::move(line.error);
  args.positional = std::move(line.positional);
  if (args.help || !args.error.empty()) return args;
  if (!backend.empty()) {
    const std::optional<PollerKind> kind = parsePollerKind(backend);
    if (!kind) {
      args.error = "unknown backend '" + backend + "' (epoll, uring or auto)";
      return args;
    }
    args.backend = *kind;
  }
  if (args.positional.size() != positionalCount) {
    args.error = "expected " + std::to_string(positionalCount) + " arguments, got " +
                 std::to_string(args.positional.size());
  }
  return args;
}

}  // namespace libnet::pingpong
