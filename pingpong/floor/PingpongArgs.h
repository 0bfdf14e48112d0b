// The positional arguments and the RESULT line of the ping-pong peers that
// are not built on libnet (asio's callbacks, coroutines and TLS, libevent, the
// epoll and io_uring floors), so that all of them accept exactly the same
// arguments, reject the same bad values with the same exit codes, and print
// the same RESULT line that the benchmark runner parses. Options are split
// from the positional arguments by pingpong/CommandLine.h, the parser that
// libnet's peers (pingpong/Args.h) use too.
//
// Plain functions and aggregates only; no state, callable from any thread.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "pingpong/CommandLine.h"

namespace pingpong {

// A numeric IPv4 or IPv6 address and a port, already converted to a sockaddr
// so that plain-socket programs need no second parse.
struct Endpoint {
  std::string address;  // as given on the command line
  uint16_t port = 0;
  sockaddr_storage storage{};
  socklen_t length = 0;

  [[nodiscard]] const sockaddr* sockAddr() const {
    return reinterpret_cast<const sockaddr*>(&storage);
  }
  [[nodiscard]] int family() const { return storage.ss_family; }
};

struct ServerArgs {
  Endpoint endpoint;
  int threads = 1;
};

struct ClientArgs {
  Endpoint endpoint;
  int threads = 1;
  size_t blocksize = 0;
  int sessions = 0;
  std::chrono::duration<double> time{};
};

// What a program may restrict beyond the common rules.
struct ProgramInfo {
  ProgramInfo(std::string_view programName, int threadLimit = 256, std::string_view usageNote = {})
      : name(programName), maxThreads(threadLimit), note(usageNote) {}

  std::string_view name;  // argv[0] is used when empty
  int maxThreads;         // libevent's single-threaded test sets 1
  std::string_view note;  // extra usage line, e.g. why threads must be 1
  // The options the program takes besides --help (none by default), and how
  // the usage line shows them, e.g. "--tls-ca FILE".
  std::span<const cmdline::Option> options;
  std::string_view optionsUsage;
  bool optionsRequired = false;  // each option of `options` must be given
};

// Exit codes shared by all peers; a runner tells a usage slip from a busy port.
inline constexpr int kExitUsage = 2;
inline constexpr int kExitFailure = 1;

// `--help` prints usage to stdout and exits 0; a wrong argument count, a bad
// value, or an unknown, empty or (with optionsRequired) missing option prints
// the problem and the usage to stderr and exits kExitUsage. The server accepts
// port 0 (the kernel picks one and "listening on" reports it), the client
// does not.
[[nodiscard]] ServerArgs parseServerArgs(int argc, char** argv, const ProgramInfo& info);
[[nodiscard]] ClientArgs parseClientArgs(int argc, char** argv, const ProgramInfo& info);

// "ADDR:PORT", with brackets around an IPv6 address.
[[nodiscard]] std::string formatEndpoint(std::string_view address, uint16_t port);

// The one line a client prints, without the trailing newline.
[[nodiscard]] std::string formatResult(std::string_view impl, const ClientArgs& args, int64_t bytes,
                                       int64_t messages, std::chrono::duration<double> elapsed);

}  // namespace pingpong
