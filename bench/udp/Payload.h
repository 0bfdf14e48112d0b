// The datagrams floor_udp_client sends: a 16-byte header (a magic number, the
// flow's index, the datagram's sequence number within its flow) followed by
// a byte pattern derived from the sequence number, so that an echo can be
// matched to what was sent and, with --verify, checked byte for byte. The
// size of each datagram is a function of (flow, seq) as well, so that a
// mixed-size run can check the length of every echo.
//
// Plain functions; no state, callable from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace udpbench {

inline constexpr size_t kHeaderBytes = 16;
inline constexpr size_t kMaxDatagram = 65507;  // the largest IPv4 UDP payload

struct PayloadHeader {
  uint32_t flow = 0;
  uint64_t seq = 0;
};

// The size of datagram `seq` of `flow`: `fixedSize`, or with fixedSize == 0
// one of a spread of sizes from kHeaderBytes up to kMaxDatagram.
[[nodiscard]] size_t datagramSize(size_t fixedSize, uint32_t flow, uint64_t seq);

// Writes the header into the first kHeaderBytes of `datagram`.
void writeHeader(std::span<char> datagram, const PayloadHeader& header);

// Fills the bytes after the header with the pattern of `seq`.
void writePattern(std::span<char> datagram, uint64_t seq);

// The header of a received datagram, or nullopt if it is too short or its
// magic number is wrong.
[[nodiscard]] std::optional<PayloadHeader> readHeader(std::span<const char> datagram);

// Whether the bytes after the header are the pattern of `seq`.
[[nodiscard]] bool patternMatches(std::span<const char> datagram, uint64_t seq);

}  // namespace udpbench
