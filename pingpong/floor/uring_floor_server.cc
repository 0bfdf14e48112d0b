// The io_uring floor: a library-free completion-based echo server (multishot
// accept and recv, a provided-buffer ring, one send in flight per
// connection), the practical limit for an io_uring backend on the ping-pong
// benchmark. With N threads each runs its own ring on its own SO_REUSEPORT
// listener.
//
// usage: uring_floor_server <address> <port> <threads>
#include <cstdio>
#include <system_error>

#include "pingpong/floor/FloorSetup.h"
#include "pingpong/floor/PingpongArgs.h"
#include "pingpong/floor/UringEchoLoop.h"

int main(int argc, char** argv) {
  const pingpong::ServerArgs args = pingpong::parseServerArgs(argc, argv, {"uring_floor_server"});
  try {
    pingpong::UniqueFd signals = pingpong::blockTerminationSignals();
    uint16_t port = 0;
    std::vector<pingpong::UniqueFd> listeners =
        pingpong::openListeners(args.endpoint, args.threads, port);
    const std::string line =
        "listening on " + pingpong::formatEndpoint(args.endpoint.address, port);
    return pingpong::runLoops<pingpong::UringEchoLoop>(listeners, signals.get(), line);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "uring_floor_server: cannot listen on %s: %s\n",
                 pingpong::formatEndpoint(args.endpoint.address, args.endpoint.port).c_str(),
                 e.what());
    return pingpong::kExitFailure;
  }
}
