// Frame: the RFC 6455 frame layer shared by Receiver and Sender: opcodes,
// roles, close codes, the frame header writer and payload masking. Pure
// functions over caller-owned memory; safe from any thread.
//
// A masking key is a uint32_t whose big-endian bytes are the four key bytes
// as they appear on the wire (key >> 24 is the byte that masks payload byte 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "net/Buffer.h"

namespace libnet::ws {

enum class Opcode : uint8_t {
  kContinuation = 0,
  kText = 1,
  kBinary = 2,
  kClose = 8,
  kPing = 9,
  kPong = 10,
};

// Which end of the connection an object works for: a client masks what it
// sends, a server never does (RFC 6455 5.1).
enum class Role { kServer, kClient };

enum class MessageType { kText, kBinary };

namespace close_code {
inline constexpr uint16_t kNormal = 1000;
inline constexpr uint16_t kGoingAway = 1001;
inline constexpr uint16_t kProtocolError = 1002;
inline constexpr uint16_t kUnsupportedData = 1003;
// Never sent: reported when a close frame carried no body.
inline constexpr uint16_t kNoStatus = 1005;
// Never sent: reported when the connection ended without a close frame.
inline constexpr uint16_t kAbnormal = 1006;
inline constexpr uint16_t kInvalidPayload = 1007;
inline constexpr uint16_t kPolicyViolation = 1008;
inline constexpr uint16_t kMessageTooBig = 1009;
inline constexpr uint16_t kMandatoryExtension = 1010;
inline constexpr uint16_t kInternalError = 1011;
}  // namespace close_code

// Control frames carry at most this many payload bytes (RFC 6455 5.5).
inline constexpr size_t kMaxControlPayload = 125;
// The longest header: 2 bytes, a 64-bit length, a masking key.
inline constexpr size_t kMaxFrameHeader = 14;

// Whether a peer may put `code` in a close frame: 1000-1003 and the
// registered 1007-1014, or 3000-4999 (libraries and applications). 1004,
// 1005, 1006, 1015 and anything else are invalid on the wire.
[[nodiscard]] bool isSendableCloseCode(uint16_t code);

[[nodiscard]] constexpr bool isControl(Opcode opcode) {
  return (static_cast<uint8_t>(opcode) & 0x8) != 0;
}

// XORs `length` bytes at `data` with `key`, where data[0] is byte `offset`
// of the frame's payload (so a payload can be unmasked in pieces as it
// arrives). Masking and unmasking are the same operation.
void maskPayload(char* data, size_t length, uint32_t key, size_t offset = 0);
// maskPayload() while copying `length` bytes from `src` to `dest` (which
// must not overlap): one pass over the bytes instead of two.
void maskCopy(char* dest, const char* src, size_t length, uint32_t key, size_t offset = 0);

// The size of the header appendFrameHeader() writes for a payload of
// `payloadLength` bytes, with a masking key or without.
[[nodiscard]] constexpr size_t frameHeaderSize(uint64_t payloadLength, bool masked) {
  return 2 + (payloadLength <= 125 ? 0 : (payloadLength <= 0xffff ? 2 : 8)) + (masked ? 4 : 0);
}

// The most bytes a message of `payloadLength` bytes takes as frames of at
// most `fragmentSize` payload bytes (0: one frame), masked or not: what a
// sender appends for it, compression aside.
[[nodiscard]] constexpr size_t framedSize(size_t payloadLength, size_t fragmentSize) {
  const size_t frames = fragmentSize == 0 ? 1 : payloadLength / fragmentSize + 1;
  return payloadLength + frames * kMaxFrameHeader;
}

// Writes a frame header at `dest` (room for kMaxFrameHeader bytes): FIN,
// RSV1 (permessage-deflate), the opcode, the length in its shortest
// encoding, and the masking key when one is given (the MASK bit is set
// exactly then). Returns its size, frameHeaderSize().
size_t writeFrameHeader(char* dest, bool fin, bool rsv1, Opcode opcode, uint64_t payloadLength,
                        std::optional<uint32_t> maskKey);

// Appends the header writeFrameHeader() makes. The payload is the caller's
// to append, masked with the same key.
void appendFrameHeader(Buffer* out, bool fin, bool rsv1, Opcode opcode, uint64_t payloadLength,
                       std::optional<uint32_t> maskKey);

// Appends a whole frame: the header, then `payload`, masked in the buffer
// when a key is given (`payload` itself is not changed).
void appendFrame(Buffer* out, bool fin, bool rsv1, Opcode opcode, std::string_view payload,
                 std::optional<uint32_t> maskKey);

}  // namespace libnet::ws
