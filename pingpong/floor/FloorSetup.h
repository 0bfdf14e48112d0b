// Process setup shared by the two floor servers (epoll and io_uring): the
// listening sockets, the termination signalfd, and the thread scaffold that
// runs one event loop per thread with loop 0 on the main thread. Free
// functions; call them from the main thread before any loop starts.
#pragma once

#include <atomic>
#include <cstdio>
#include <latch>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "pingpong/floor/PingpongArgs.h"
#include "pingpong/floor/UniqueFd.h"

namespace pingpong {

// Opens `count` non-blocking listeners on `endpoint`. With count > 1 each has
// SO_REUSEPORT so that the kernel spreads connections over the loops; the
// first one binds the requested port (possibly 0) and the rest bind the port
// it got. Throws std::system_error naming the failing call (bind: EADDRINUSE).
// `boundPort` receives the port actually bound.
[[nodiscard]] std::vector<UniqueFd> openListeners(const Endpoint& endpoint, int count,
                                                  uint16_t& boundPort);

// Blocks SIGINT and SIGTERM in the calling thread (threads started later
// inherit the mask) and returns a non-blocking signalfd for them. Every loop
// polls the same signalfd and nobody reads it: a pending signal keeps it
// readable, so all loops see it and stop. Also ignores SIGPIPE, since a peer
// that resets a connection must not kill the server.
[[nodiscard]] UniqueFd blockTerminationSignals();

// Constructs one Loop per listener, each in the thread that will run it (an
// io_uring created with SINGLE_ISSUER belongs to its creating thread), prints
// `listeningLine` once every loop is ready, and runs them until the signalfd
// fires. Loop 0 runs on the calling thread, so threads == 1 means one thread.
// Returns the process exit status: 0, or kExitFailure if a loop failed to set
// up (the error is printed to stderr).
template <typename Loop>
int runLoops(std::vector<UniqueFd>& listeners, int signalFd, const std::string& listeningLine) {
  const auto n = static_cast<std::ptrdiff_t>(listeners.size());
  std::latch ready(n);
  std::atomic<bool> failed{false};

  // Each thread builds its loop, reports, and waits for the others so that
  // a setup failure anywhere stops everyone before any loop serves traffic.
  auto body = [&](int i) {
    std::unique_ptr<Loop> loop;
    try {
      loop = std::make_unique<Loop>(listeners[i].get(), signalFd);
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "loop %d setup failed: %s\n", i, e.what());
      failed = true;
    }
    ready.arrive_and_wait();
    if (failed) return;
    if (i == 0) {
      std::printf("%s\n", listeningLine.c_str());
      std::fflush(stdout);
    }
    try {
      loop->run();
    } catch (const std::system_error& e) {
      // A loop that dies cannot be restarted; a stopped server is easier to
      // diagnose than one that silently serves a fraction of connections.
      std::fprintf(stderr, "loop %d failed: %s\n", i, e.what());
      std::fflush(stderr);
      std::_Exit(kExitFailure);
    }
  };

  std::vector<std::jthread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(body, i);
  body(0);
  threads.clear();  // joins
  return failed ? kExitFailure : 0;
}

// The whole main() of a floor server: parses "<address> <port> <threads>",
// opens the listeners, blocks SIGINT/SIGTERM for the loops' signalfd and runs
// one Loop per thread. Returns the process exit status.
template <typename Loop>
int runFloorServer(int argc, char** argv, const char* program) {
  const ServerArgs args = parseServerArgs(argc, argv, {program});
  try {
    UniqueFd signals = blockTerminationSignals();
    uint16_t port = 0;
    std::vector<UniqueFd> listeners = openListeners(args.endpoint, args.threads, port);
    const std::string line = "listening on " + formatEndpoint(args.endpoint.address, port);
    return runLoops<Loop>(listeners, signals.get(), line);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "%s: cannot listen on %s: %s\n", program,
                 formatEndpoint(args.endpoint.address, args.endpoint.port).c_str(), e.what());
    return kExitFailure;
  }
}

}  // namespace pingpong
