// What the WebSocket tests' hand-made clients (a BlockingClient, no library
// code on the client side) send and read: the upgrade request, masked
// frames written byte by byte, and the server's 101 head.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/net/TestUtil.h"

namespace libnet::test {

// A masked client frame (payloads up to 64 KiB).
inline std::string clientFrame(uint8_t opcode, std::string_view payload, bool fin = true) {
  std::string frame(1, static_cast<char>((fin ? 0x80 : 0) | opcode));
  if (payload.size() < 126) {
    frame += static_cast<char>(0x80 | payload.size());
  } else {
    frame += static_cast<char>(0x80 | 126);
    frame += static_cast<char>(payload.size() >> 8);
    frame += static_cast<char>(payload.size() & 0xff);
  }
  const char key[4] = {0x12, 0x34, 0x56, 0x78};
  frame.append(key, 4);
  for (size_t i = 0; i < payload.size(); ++i) frame += static_cast<char>(payload[i] ^ key[i % 4]);
  return frame;
}

// The upgrade request for /ws.
inline std::string upgradeRequest(std::string_view version = "13") {
  return "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: " +
         std::string(version) + "\r\n\r\n";
}

// Reads the 101 head off a hand-made client (a failure if it is not one);
// returns what came after it.
inline std::string readUpgradeHead(BlockingClient& client) {
  std::string got;
  while (got.find("\r\n\r\n") == std::string::npos) {
    const std::string more = client.recvExactly(1);
    if (more.empty()) return "(closed) " + got;
    got += more;
  }
  EXPECT_EQ(got.rfind("HTTP/1.1 101 ", 0), 0u) << got;
  return got;
}

}  // namespace libnet::test
