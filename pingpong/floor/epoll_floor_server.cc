// The epoll floor: a library-free edge-triggered echo server, the practical
// limit for an epoll backend on the ping-pong benchmark. With N threads each
// runs its own loop on its own SO_REUSEPORT listener.
//
// usage: epoll_floor_server <address> <port> <threads>
#include <cstdio>
#include <system_error>

#include "pingpong/floor/EpollEchoLoop.h"
#include "pingpong/floor/FloorSetup.h"
#include "pingpong/floor/PingpongArgs.h"

int main(int argc, char** argv) {
  const pingpong::ServerArgs args = pingpong::parseServerArgs(argc, argv, {"epoll_floor_server"});
  try {
    pingpong::UniqueFd signals = pingpong::blockTerminationSignals();
    uint16_t port = 0;
    std::vector<pingpong::UniqueFd> listeners =
        pingpong::openListeners(args.endpoint, args.threads, port);
    const std::string line =
        "listening on " + pingpong::formatEndpoint(args.endpoint.address, port);
    return pingpong::runLoops<pingpong::EpollEchoLoop>(listeners, signals.get(), line);
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "epoll_floor_server: cannot listen on %s: %s\n",
                 pingpong::formatEndpoint(args.endpoint.address, args.endpoint.port).c_str(),
                 e.what());
    return pingpong::kExitFailure;
  }
}
