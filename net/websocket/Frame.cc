#include "net/websocket/Frame.h"

#include <cstring>

namespace libnet::ws {

bool isSendableCloseCode(uint16_t code) {
  if (code >= 1000 && code <= 1003) return true;
  if (code >= 1007 && code <= 1014) return true;
  return code >= 3000 && code <= 4999;
}

namespace {

// The key's bytes in wire order, rotated so that byte 0 masks payload byte
// `offset`, twice over: the pattern for eight bytes at a time.
uint64_t maskPattern(uint32_t key, size_t offset, unsigned char (&kb)[8]) {
  const unsigned char wire[4] = {
      static_cast<unsigned char>(key >> 24), static_cast<unsigned char>(key >> 16),
      static_cast<unsigned char>(key >> 8), static_cast<unsigned char>(key)};
  for (size_t i = 0; i < 8; ++i) kb[i] = wire[(offset + i) & 3];
  uint64_t pattern;
  std::memcpy(&pattern, kb, sizeof pattern);
  return pattern;
}

// writeFrameHeader()'s body, which appendFrameHeader() inlines: a small
// message's echo writes a header per message.
inline size_t writeHeader(char* dest, bool fin, bool rsv1, Opcode opcode, uint64_t payloadLength,
                          std::optional<uint32_t> maskKey) {
  auto* p = reinterpret_cast<unsigned char*>(dest);
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
  return n;
}

}  // namespace

void maskPayload(char* data, size_t length, uint32_t key, size_t offset) {
  maskCopy(data, data, length, key, offset);
}

void maskCopy(char* dest, const char* src, size_t length, uint32_t key, size_t offset) {
  unsigned char kb[8];
  const uint64_t pattern = maskPattern(key, offset, kb);
  // Eight bytes at a time through memcpy (unaligned-safe; plain loads and
  // stores, and the loop vectorizes): a multiple of four keeps the key's
  // phase. dest == src is fine: each word is read before it is written.
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t word;
    std::memcpy(&word, src + i, sizeof word);
    word ^= pattern;
    std::memcpy(dest + i, &word, sizeof word);
  }
  for (; i < length; ++i) dest[i] = static_cast<char>(src[i] ^ kb[i & 7]);
}

size_t writeFrameHeader(char* dest, bool fin, bool rsv1, Opcode opcode, uint64_t payloadLength,
                        std::optional<uint32_t> maskKey) {
  return writeHeader(dest, fin, rsv1, opcode, payloadLength, maskKey);
}

void appendFrameHeader(Buffer* out, bool fin, bool rsv1, Opcode opcode, uint64_t payloadLength,
                       std::optional<uint32_t> maskKey) {
  out->ensureWritableBytes(kMaxFrameHeader);
  out->hasWritten(writeHeader(out->beginWrite(), fin, rsv1, opcode, payloadLength, maskKey));
}

void appendFrame(Buffer* out, bool fin, bool rsv1, Opcode opcode, std::string_view payload,
                 std::optional<uint32_t> maskKey) {
  appendFrameHeader(out, fin, rsv1, opcode, payload.size(), maskKey);
  if (payload.empty()) return;
  out->ensureWritableBytes(payload.size());
  char* dest = out->beginWrite();
  if (maskKey) {
    maskCopy(dest, payload.data(), payload.size(), *maskKey, 0);
  } else {
    std::memcpy(dest, payload.data(), payload.size());
  }
  out->hasWritten(payload.size());
}

}  // namespace libnet::ws
