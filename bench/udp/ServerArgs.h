// The command line and the stop line that the UDP echo servers of the
// benchmark share (asio_udp_echo_server and floor_udp_echo_server, and by
// contract libnet's examples/udp:udp_echo_server), so that
// bench/udp/run_udp_bench.py drives all of them alike:
//
//   PROGRAM --port P [--address A] [--threads N] [--sink] [--batch B]
//
// Once bound, a server prints "listening on ADDR:PORT" (port 0 lets the
// kernel choose); on SIGINT or SIGTERM it prints
// "received=N bytes=M echoed=K dropped=D" and exits 0.
//
// Plain functions and aggregates; no state, callable from any thread.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace udpbench {

struct ServerArgs {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  int threads = 1;
  bool sink = false;  // count datagrams, echo none
  int batch = 64;     // datagrams per recvmmsg/sendmmsg (the floor only)
};

// Which options a program takes besides --port, --address and --sink.
struct ServerOptions {
  std::string_view program;
  bool threads = false;
  bool batch = false;
};

// Exits 0 after printing usage for --help; exits 2 with a message for a bad
// or missing option.
[[nodiscard]] ServerArgs parseServerArgs(int argc, char** argv, const ServerOptions& options);

// A numeric IPv4 or IPv6 address and port as a sockaddr; false if `address`
// is not numeric.
[[nodiscard]] bool toSockaddr(const std::string& address, uint16_t port, sockaddr_storage* out,
                              socklen_t* length);

// "ADDR:PORT", with brackets around an IPv6 address.
[[nodiscard]] std::string formatEndpoint(std::string_view address, uint16_t port);

// What a server counted, printed once when it stops.
struct ServerCounters {
  uint64_t received = 0;
  uint64_t bytes = 0;
  uint64_t echoed = 0;
  uint64_t dropped = 0;  // echoes the kernel refused (socket buffer full, peer gone)

  ServerCounters& operator+=(const ServerCounters& other) {
    received += other.received;
    bytes += other.bytes;
    echoed += other.echoed;
    dropped += other.dropped;
    return *this;
  }
};

// Prints the stop line to stdout and flushes it.
void printStopLine(const ServerCounters& counters);

}  // namespace udpbench
