// The io_uring floor: a library-free completion-based echo server (multishot
// accept and recv, a provided-buffer ring, one send in flight per
// connection), the practical limit for an io_uring backend on the ping-pong
// benchmark. With N threads each runs its own ring on its own SO_REUSEPORT
// listener.
//
// usage: uring_floor_server <address> <port> <threads>
#include "pingpong/floor/FloorSetup.h"
#include "pingpong/floor/UringEchoLoop.h"

int main(int argc, char** argv) {
  return pingpong::runFloorServer<pingpong::UringEchoLoop>(argc, argv, "uring_floor_server");
}
