// The command line of ws_load, the WebSocket load client of
// bench/websocket/run_ws_bench.py:
//
//   ws_load --server IP:PORT -c CONNS -d SECS --size BYTES [--text] [--deflate]
//           [--verify] [--warmup SECS]
//
// Plain functions and an aggregate; no state, callable from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wsload {

struct WsLoadArgs {
  std::string host;  // numeric IPv4 address
  uint16_t port = 0;
  int conns = 1;
  double seconds = 5;  // the measured window
  double warmup = 0;   // before the window; its messages are not counted
  size_t size = 32;    // uncompressed payload bytes per message
  bool text = false;   // text messages instead of binary ones
  bool deflate = false;
  bool verify = false;
};

// Exits 0 after printing usage for --help; exits 2 with a message for a bad
// or missing option.
[[nodiscard]] WsLoadArgs parseWsLoadArgs(int argc, char** argv);

}  // namespace wsload
