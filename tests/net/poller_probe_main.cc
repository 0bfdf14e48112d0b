// poller_probe_main: constructs one EventLoop for the backend named on the
// command line and says which backend it got. PollerSelectionTest runs it in
// child processes, because the LIBNET_POLLER override and the io_uring probe
// are read once per process, and the ENOMEM fallback needs an unprivileged
// process with RLIMIT_MEMLOCK 0.
//
//   poller_probe_main epoll|uring|io_uring|auto
//
// stdout: "backend=<name>" and exit 0; "error=<what()>" and exit 3 if the
// loop could not be created (std::system_error); exit 2 for bad arguments.
// Log lines (the fallback notice, a bad LIBNET_POLLER) go to stderr.

#include <iostream>
#include <optional>
#include <system_error>

#include "net/EventLoop.h"
#include "net/PollerKind.h"

int main(int argc, char* argv[]) {
  constexpr int kExitUsage = 2;
  constexpr int kExitLoopError = 3;
  if (argc != 2) {
    std::cerr << "usage: poller_probe_main epoll|uring|io_uring|auto\n";
    return kExitUsage;
  }
  const std::optional<libnet::PollerKind> kind = libnet::parsePollerKind(argv[1]);
  if (!kind) {
    std::cerr << "poller_probe_main: unknown backend '" << argv[1] << "'\n";
    return kExitUsage;
  }
  try {
    libnet::EventLoop loop(*kind);
    std::cout << "backend=" << libnet::pollerKindName(loop.pollerKind()) << std::endl;
  } catch (const std::system_error& e) {
    std::cout << "error=" << e.what() << std::endl;
    return kExitLoopError;
  }
  return 0;
}
