// The main() of the ping-pong servers (pingpong_server, coro_pingpong_server):
// the command line, logging, signals and the TcpServer are the same; only
// how a connection echoes differs.
#pragma once

#include <functional>

namespace libnet {
class TcpServer;
}

namespace libnet::pingpong {

struct ServerProgram {
  const char* name;  // for messages, the log file and the server's name
  const char* how;   // completes "Echoes everything it receives" in --help
  // Sets up how `server` echoes (before start()).
  std::function<void(TcpServer&)> serve;
};

// "<program> [--backend ...] [--log-dir DIR] <address> <port> <threads>":
// serves until SIGINT/SIGTERM; returns the exit status.
int serverMain(int argc, char* argv[], const ServerProgram& program);

}  // namespace libnet::pingpong
