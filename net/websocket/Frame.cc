#include "net/websocket/Frame.h"

#include <cstring>

namespace libnet::ws {

bool isSendableCloseCode(uint16_t code) {
  if (code >= 1000 && code <= 1003) return true;
  if (code >= 1007 && code <= 1014) return true;
  return code >= 3000 && code <= 4999;
}

void maskPayload(char* data, size_t length, uint32_t key, size_t offset) {
  // The key's bytes in wire order, rotated so that kb[0] masks data[0].
  unsigned char wire[4] = {static_cast<unsigned char>(key >> 24),
                           static_cast<unsigned char>(key >> 16),
                           static_cast<unsigned char>(key >> 8), static_cast<unsigned char>(key)};
  unsigned char kb[8];
  for (size_t i = 0; i < 8; ++i) kb[i] = wire[(offset + i) & 3];
  uint64_t pattern;
  std::memcpy(&pattern, kb, sizeof pattern);
  // Eight bytes at a time through memcpy (unaligned-safe; compiles to plain
  // loads and stores, and the loop vectorizes): a multiple of four keeps the
  // key's phase.
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t word;
    std::memcpy(&word, data + i, sizeof word);
    word ^= pattern;
    std::memcpy(data + i, &word, sizeof word);
  }
  for (; i < length; ++i) data[i] = static_cast<char>(data[i] ^ kb[i & 7]);
}

void appendFrameHeader(Buffer* out, bool fin, bool rsv1, Opcode opcode, uint64_t payloadLength,
                       std::optional<uint32_t> maskKey) {
  out->ensureWritableBytes(kMaxFrameHeader);
  auto* p = reinterpret_cast<unsigned char*>(out->beginWrite());
  size_t n = 0;
  p[n++] = static_cast<unsigned char>((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) |
                                      static_cast<uint8_t>(opcode));
  const unsigned char maskBit = maskKey ? 0x80 : 0;
  if (payloadLength <= 125) {
    p[n++] = static_cast<unsigned char>(maskBit | payloadLength);
  } else if (payloadLength <= 0xffff) {
    p[n++] = maskBit | 126;
    p[n++] = static_cast<unsigned char>(payloadLength >> 8);
    p[n++] = static_cast<unsigned char>(payloadLength);
  } else {
    p[n++] = maskBit | 127;
    for (int shift = 56; shift >= 0; shift -= 8) {
      p[n++] = static_cast<unsigned char>(payloadLength >> shift);
    }
  }
  if (maskKey) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      p[n++] = static_cast<unsigned char>(*maskKey >> shift);
    }
  }
  out->hasWritten(n);
}

void appendFrame(Buffer* out, bool fin, bool rsv1, Opcode opcode, std::string_view payload,
                 std::optional<uint32_t> maskKey) {
  appendFrameHeader(out, fin, rsv1, opcode, payload.size(), maskKey);
  if (payload.empty()) return;
  out->ensureWritableBytes(payload.size());
  char* dest = out->beginWrite();
  std::memcpy(dest, payload.data(), payload.size());
  if (maskKey) maskPayload(dest, payload.size(), *maskKey, 0);
  out->hasWritten(payload.size());
}

}  // namespace libnet::ws
