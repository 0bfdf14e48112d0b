// The epoll floor: a library-free edge-triggered echo server, the practical
// limit for an epoll backend on the ping-pong benchmark. With N threads each
// runs its own loop on its own SO_REUSEPORT listener.
//
// usage: epoll_floor_server <address> <port> <threads>
#include "pingpong/floor/EpollEchoLoop.h"
#include "pingpong/floor/FloorSetup.h"

int main(int argc, char** argv) {
  return pingpong::runFloorServer<pingpong::EpollEchoLoop>(argc, argv, "epoll_floor_server");
}
