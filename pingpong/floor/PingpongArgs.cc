#include "pingpong/floor/PingpongArgs.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

namespace pingpong {
namespace {

// Large enough for any sane run; the caps exist so that a typo (an extra
// digit) is reported instead of exhausting memory or fds.
constexpr int64_t kMaxBlocksize = 64 << 20;
constexpr int64_t kMaxSessions = 1'000'000;
constexpr double kMaxSeconds = 24 * 3600;

std::string programName(const ProgramInfo& info, char** argv) {
  if (!info.name.empty()) return std::string(info.name);
  return argv[0] != nullptr ? argv[0] : "pingpong";
}

void printUsage(FILE* out, const std::string& prog, const ProgramInfo& info, bool client) {
  const std::string options = info.optionsUsage.empty() ? "" : " " + std::string(info.optionsUsage);
  if (client) {
    std::fprintf(out,
                 "usage: %s%s <address> <port> <threads> <blocksize> <sessions> <time_seconds>\n"
                 "  Opens <sessions> connections spread over <threads> threads; each sends one\n"
                 "  <blocksize>-byte message and then echoes whatever it receives. After\n"
                 "  <time_seconds> it prints one RESULT line.\n",
                 prog.c_str(), options.c_str());
  } else {
    std::fprintf(out,
                 "usage: %s%s <address> <port> <threads>\n"
                 "  Echoes whatever each connection sends until SIGINT or SIGTERM.\n"
                 "  Port 0 lets the kernel choose; the port is reported on stdout.\n",
                 prog.c_str(), options.c_str());
  }
  if (!info.note.empty()) {
    std::fprintf(out, "  %.*s\n", static_cast<int>(info.note.size()), info.note.data());
  }
}

[[noreturn]] void usageError(const std::string& prog, const ProgramInfo& info, bool client,
                             const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", prog.c_str(), message.c_str());
  printUsage(stderr, prog, info, client);
  std::exit(kExitUsage);
}

std::optional<Endpoint> parseEndpoint(std::string_view address, uint16_t port) {
  Endpoint ep;
  ep.address = std::string(address);
  ep.port = port;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ep.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ep.storage);
  if (inet_pton(AF_INET, ep.address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    ep.length = sizeof(sockaddr_in);
    return ep;
  }
  ep.storage = {};
  if (inet_pton(AF_INET6, ep.address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    ep.length = sizeof(sockaddr_in6);
    return ep;
  }
  return std::nullopt;
}

// The positional arguments, once the options are taken out; exits after
// --help or a bad option.
std::vector<std::string> positionalArgs(int argc, char** argv, const std::string& prog,
                                        const ProgramInfo& info, bool client) {
  cmdline::CommandLine line = cmdline::parseCommandLine(argc, argv, info.options);
  if (line.help) {
    printUsage(stdout, prog, info, client);
    std::exit(0);
  }
  if (!line.error.empty()) usageError(prog, info, client, line.error);
  if (info.optionsRequired) {
    for (const cmdline::Option& option : info.options) {
      if (option.value != nullptr && option.value->empty()) {
        usageError(prog, info, client, "missing option " + std::string(option.name));
      }
    }
  }
  const size_t expected = client ? 6 : 3;
  if (line.positional.size() != expected) {
    usageError(prog, info, client, "expected " + std::to_string(expected) + " arguments");
  }
  return std::move(line.positional);
}

// The three leading arguments common to client and server.
void parseCommon(const std::vector<std::string>& positional, const std::string& prog,
                 const ProgramInfo& info, bool client, Endpoint& endpoint, int& threads) {
  const auto port = cmdline::parseNumber(positional[1], client ? 1 : 0, 65535);
  if (!port) usageError(prog, info, client, "bad port: " + positional[1]);
  const auto ep = parseEndpoint(positional[0], static_cast<uint16_t>(*port));
  if (!ep) {
    usageError(prog, info, client,
               "bad address (want a numeric IPv4 or IPv6 address): " + positional[0]);
  }
  endpoint = *ep;
  const auto t = cmdline::parseNumber(positional[2], 1, info.maxThreads);
  if (!t) {
    const std::string range =
        info.maxThreads == 1 ? "must be 1" : "want 1.." + std::to_string(info.maxThreads);
    usageError(prog, info, client, "bad threads: " + positional[2] + " (" + range + ")");
  }
  threads = static_cast<int>(*t);
}

}  // namespace

ServerArgs parseServerArgs(int argc, char** argv, const ProgramInfo& info) {
  const std::string prog = programName(info, argv);
  const std::vector<std::string> positional = positionalArgs(argc, argv, prog, info, false);
  ServerArgs args;
  parseCommon(positional, prog, info, false, args.endpoint, args.threads);
  return args;
}

ClientArgs parseClientArgs(int argc, char** argv, const ProgramInfo& info) {
  const std::string prog = programName(info, argv);
  const std::vector<std::string> positional = positionalArgs(argc, argv, prog, info, true);
  ClientArgs args;
  parseCommon(positional, prog, info, true, args.endpoint, args.threads);
  const auto blocksize = cmdline::parseNumber(positional[3], 1, kMaxBlocksize);
  if (!blocksize) usageError(prog, info, true, "bad blocksize: " + positional[3]);
  args.blocksize = static_cast<size_t>(*blocksize);
  const auto sessions = cmdline::parseNumber(positional[4], 1, kMaxSessions);
  if (!sessions) usageError(prog, info, true, "bad sessions: " + positional[4]);
  args.sessions = static_cast<int>(*sessions);

  // Fractional seconds are accepted so that tests can run short rounds.
  const std::string_view text = positional[5];
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
      seconds <= 0 || seconds > kMaxSeconds) {
    usageError(prog, info, true, "bad time_seconds: " + positional[5]);
  }
  args.time = std::chrono::duration<double>(seconds);
  return args;
}

std::string formatEndpoint(std::string_view address, uint16_t port) {
  std::string out;
  if (address.find(':') != std::string_view::npos) {
    out = "[" + std::string(address) + "]";
  } else {
    out = std::string(address);
  }
  return out + ":" + std::to_string(port);
}

std::string formatResult(std::string_view impl, const ClientArgs& args, int64_t bytes,
                         int64_t messages, std::chrono::duration<double> elapsed) {
  const double seconds = elapsed.count();
  const double mibps = seconds > 0 ? static_cast<double>(bytes) / seconds / 1048576.0 : 0.0;
  char line[512];
  std::snprintf(line, sizeof line,
                "RESULT impl=%.*s threads=%d blocksize=%zu sessions=%d bytes=%" PRId64
                " messages=%" PRId64 " seconds=%.3f mibps=%.2f",
                static_cast<int>(impl.size()), impl.data(), args.threads, args.blocksize,
                args.sessions, bytes, messages, seconds, mibps);
  return line;
}

}  // namespace pingpong
