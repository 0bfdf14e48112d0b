// poller_probe_main: constructs one EventLoop for the backend named on the
// command line and says which backend it got. PollerSelectionTest runs it in
// child processes, because the LIBNET_POLLER override and the io_uring probe
// are read once per process, and the ENOMEM fallback needs an unprivileged
// process with RLIMIT_MEMLOCK 0.
//
//   poller_probe_main epoll|uring|io_uring|auto [--simulate-missing STAGE]
//
// STAGE (setup, opcodes, buffer-ring, multishot-recv): the io_uring probe
// reports that stage as missing, as a kernel without it would.
//
// stdout: "backend=<name>" and exit 0; "error=<what()>" and exit 3 if the
// loop could not be created (std::system_error); exit 2 for bad arguments.
// Log lines (the fallback notice, a bad LIBNET_POLLER) go to stderr.
//
//   poller_probe_main probe-then-wait
//
// Runs the process's io_uring probe from this (the main) thread, then makes
// kWaits blocking recv calls with a short SO_RCVTIMEO on an idle socketpair,
// and prints "probe=ok|unavailable interrupted=N": N of them failed with
// EINTR instead of timing out (a ring closed on this thread interrupts it).

#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <iostream>
#include <optional>
#include <string_view>
#include <system_error>

#include "base/UniqueFd.h"
#include "net/EventLoop.h"
#include "net/PollerKind.h"
#include "net/poller/UringProbe.h"

namespace {

int probeThenWait() {
  constexpr int kWaits = 5;
  const bool ok = libnet::UringProbe::result().ok;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    std::cerr << "poller_probe_main: socketpair failed\n";
    return 1;
  }
  const libnet::UniqueFd reader(pair[0]);
  const libnet::UniqueFd writer(pair[1]);
  timeval timeout{0, 50 * 1000};
  ::setsockopt(reader.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  int interrupted = 0;
  for (int i = 0; i < kWaits; ++i) {
    char byte;
    if (::recv(reader.get(), &byte, 1, 0) < 0 && errno == EINTR) ++interrupted;
  }
  std::cout << "probe=" << (ok ? "ok" : "unavailable") << " interrupted=" << interrupted
            << std::endl;
  return 0;
}

std::optional<libnet::UringProbe::Stage> parseStage(std::string_view name) {
  using Stage = libnet::UringProbe::Stage;
  if (name == "setup") return Stage::kSetup;
  if (name == "opcodes") return Stage::kOpcodes;
  if (name == "buffer-ring") return Stage::kBufferRing;
  if (name == "multishot-recv") return Stage::kMultishotRecv;
  return std::nullopt;
}

}  // namespace

int main(int argc, char* argv[]) {
  constexpr int kExitUsage = 2;
  constexpr int kExitLoopError = 3;
  constexpr std::string_view kUsage =
      "usage: poller_probe_main epoll|uring|io_uring|auto [--simulate-missing STAGE]\n"
      "       poller_probe_main probe-then-wait\n";
  if (argc == 2 && std::string_view(argv[1]) == "probe-then-wait") return probeThenWait();
  if (argc != 2 && !(argc == 4 && std::string_view(argv[2]) == "--simulate-missing")) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::optional<libnet::PollerKind> kind = libnet::parsePollerKind(argv[1]);
  if (!kind) {
    std::cerr << "poller_probe_main: unknown backend '" << argv[1] << "'\n";
    return kExitUsage;
  }
  if (argc == 4) {
    const auto stage = parseStage(argv[3]);
    if (!stage) {
      std::cerr << "poller_probe_main: unknown stage '" << argv[3] << "'\n";
      return kExitUsage;
    }
    libnet::UringProbe::simulateFailure(*stage);
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
