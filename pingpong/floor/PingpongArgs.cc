#include "pingpong/floor/PingpongArgs.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

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
  if (client) {
    std::fprintf(out,
                 "usage: %s <address> <port> <threads> <blocksize> <sessions> <time_seconds>\n"
                 "  Opens <sessions> connections spread over <threads> threads; each sends one\n"
                 "  <blocksize>-byte message and then echoes whatever it receives. After\n"
                 "  <time_seconds> it prints one RESULT line.\n",
                 prog.c_str());
  } else {
    std::fprintf(out,
                 "usage: %s <address> <port> <threads>\n"
                 "  Echoes whatever each connection sends until SIGINT or SIGTERM.\n"
                 "  Port 0 lets the kernel choose; the port is reported on stdout.\n",
                 prog.c_str());
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

std::optional<int64_t> parseInt(std::string_view text, int64_t lo, int64_t hi) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi) {
    return std::nullopt;
  }
  return value;
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

bool wantsHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  }
  return false;
}

// The three leading arguments common to client and server.
void parseCommon(char** argv, const std::string& prog, const ProgramInfo& info, bool client,
                 Endpoint& endpoint, int& threads) {
  const auto port = parseInt(argv[2], client ? 1 : 0, 65535);
  if (!port) usageError(prog, info, client, std::string("bad port: ") + argv[2]);
  const auto ep = parseEndpoint(argv[1], static_cast<uint16_t>(*port));
  if (!ep) {
    usageError(prog, info, client,
               std::string("bad address (want a numeric IPv4 or IPv6 address): ") + argv[1]);
  }
  endpoint = *ep;
  const auto t = parseInt(argv[3], 1, info.maxThreads);
  if (!t) {
    const std::string range =
        info.maxThreads == 1 ? "must be 1" : "want 1.." + std::to_string(info.maxThreads);
    usageError(prog, info, client, "bad threads: " + std::string(argv[3]) + " (" + range + ")");
  }
  threads = static_cast<int>(*t);
}

}  // namespace

ServerArgs parseServerArgs(int argc, char** argv, const ProgramInfo& info) {
  const std::string prog = programName(info, argv);
  if (wantsHelp(argc, argv)) {
    printUsage(stdout, prog, info, false);
    std::exit(0);
  }
  if (argc != 4) usageError(prog, info, false, "expected 3 arguments");
  ServerArgs args;
  parseCommon(argv, prog, info, false, args.endpoint, args.threads);
  return args;
}

ClientArgs parseClientArgs(int argc, char** argv, const ProgramInfo& info) {
  const std::string prog = programName(info, argv);
  if (wantsHelp(argc, argv)) {
    printUsage(stdout, prog, info, true);
    std::exit(0);
  }
  if (argc != 7) usageError(prog, info, true, "expected 6 arguments");
  ClientArgs args;
  parseCommon(argv, prog, info, true, args.endpoint, args.threads);
  const auto blocksize = parseInt(argv[4], 1, kMaxBlocksize);
  if (!blocksize) usageError(prog, info, true, std::string("bad blocksize: ") + argv[4]);
  args.blocksize = static_cast<size_t>(*blocksize);
  const auto sessions = parseInt(argv[5], 1, kMaxSessions);
  if (!sessions) usageError(prog, info, true, std::string("bad sessions: ") + argv[5]);
  args.sessions = static_cast<int>(*sessions);

  // Fractional seconds are accepted so that tests can run short rounds.
  const std::string_view text = argv[6];
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) ||
      seconds <= 0 || seconds > kMaxSeconds) {
    usageError(prog, info, true, std::string("bad time_seconds: ") + argv[6]);
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
