#include "bench/udp/Payload.h"

#include <array>
#include <cstring>

namespace udpbench {
namespace {

constexpr uint32_t kMagic = 0x55445042;  // "UDPB"

// Sizes that cross the interesting boundaries: tiny, the benchmark's two,
// one Ethernet MTU's payload, a jumbo frame, and up to the IPv4 maximum.
constexpr std::array<size_t, 11> kMixedSizes = {kHeaderBytes, 64,   200,   512,   1200,        1472,
                                                4096,         9000, 16384, 32768, kMaxDatagram};

uint8_t patternByte(uint64_t seq, size_t i) { return static_cast<uint8_t>(seq * 131 + i * 7); }

}  // namespace

size_t datagramSize(size_t fixedSize, uint32_t flow, uint64_t seq) {
  if (fixedSize != 0) return fixedSize;
  return kMixedSizes[(seq * 7 + flow) % kMixedSizes.size()];
}

void writeHeader(std::span<char> datagram, const PayloadHeader& header) {
  char* p = datagram.data();
  std::memcpy(p, &kMagic, 4);
  std::memcpy(p + 4, &header.flow, 4);
  std::memcpy(p + 8, &header.seq, 8);
}

void writePattern(std::span<char> datagram, uint64_t seq) {
  for (size_t i = kHeaderBytes; i < datagram.size(); ++i) {
    datagram[i] = static_cast<char>(patternByte(seq, i));
  }
}

std::optional<PayloadHeader> readHeader(std::span<const char> datagram) {
  if (datagram.size() < kHeaderBytes) return std::nullopt;
  uint32_t magic = 0;
  std::memcpy(&magic, datagram.data(), 4);
  if (magic != kMagic) return std::nullopt;
  PayloadHeader header;
  std::memcpy(&header.flow, datagram.data() + 4, 4);
  std::memcpy(&header.seq, datagram.data() + 8, 8);
  return header;
}

bool patternMatches(std::span<const char> datagram, uint64_t seq) {
  for (size_t i = kHeaderBytes; i < datagram.size(); ++i) {
    if (static_cast<uint8_t>(datagram[i]) != patternByte(seq, i)) return false;
  }
  return true;
}

}  // namespace udpbench
