#include "net/websocket/Sender.h"

#include <sys/random.h>

#include <cassert>
#include <cstring>
#include <system_error>

namespace libnet::ws {

namespace {

void randomBytes(void* data, size_t length) {
  auto* p = static_cast<char*>(data);
  while (length > 0) {
    ssize_t n = ::getrandom(p, length, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::system_category(), "getrandom");
    }
    p += n;
    length -= static_cast<size_t>(n);
  }
}

Opcode dataOpcode(MessageType type) {
  return type == MessageType::kText ? Opcode::kText : Opcode::kBinary;
}

}  // namespace

Sender::Sender(Role self, const std::optional<DeflateParams>& deflate,
               const DeflateOptions& options)
    : self_(self), rngState_{0, 0} {
  if (deflate) {
    deflater_ = std::make_unique<Deflater>(self, *deflate, options.level);
    minCompressSize_ = options.minMessageSize;
  }
  if (self_ == Role::kClient) {
    randomBytes(rngState_, sizeof rngState_);
    if (rngState_[0] == 0 && rngState_[1] == 0) rngState_[0] = 1;  // xorshift's fixed point
  }
}

Sender::~Sender() = default;

std::optional<uint32_t> Sender::nextMaskKey() {
  if (self_ == Role::kServer) return std::nullopt;
  // xorshift128+: a fresh key per frame for the price of a few shifts.
  uint64_t s1 = rngState_[0];
  const uint64_t s0 = rngState_[1];
  rngState_[0] = s0;
  s1 ^= s1 << 23;
  rngState_[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
  return static_cast<uint32_t>((rngState_[1] + s0) >> 32);
}

void Sender::appendMessage(Buffer* out, MessageType type, std::string_view payload,
                           size_t fragmentSize) {
  assert(!streaming_);
  if (deflater_ && payload.size() >= minCompressSize_) {
    deflater_->compress(payload, &compressed_);
    appendFrames(out, dataOpcode(type), true, compressed_, fragmentSize);
  } else {
    appendFrames(out, dataOpcode(type), false, payload, fragmentSize);
  }
}

void Sender::appendFrames(Buffer* out, Opcode opcode, bool rsv1, std::string_view payload,
                          size_t fragmentSize) {
  if (fragmentSize == 0 || payload.size() <= fragmentSize) {
    appendFrame(out, true, rsv1, opcode, payload, nextMaskKey());
    return;
  }
  bool first = true;
  while (!payload.empty()) {
    std::string_view piece = payload.substr(0, fragmentSize);
    payload.remove_prefix(piece.size());
    appendFrame(out, payload.empty(), first && rsv1, first ? opcode : Opcode::kContinuation, piece,
                nextMaskKey());
    first = false;
  }
}

void Sender::appendFragment(Buffer* out, MessageType type, std::string_view piece, bool fin) {
  const Opcode opcode = streaming_ ? Opcode::kContinuation : dataOpcode(type);
  appendFrame(out, fin, false, opcode, piece, nextMaskKey());
  streaming_ = !fin;
}

void Sender::appendPing(Buffer* out, std::string_view payload) {
  appendControl(out, Opcode::kPing, payload);
}

void Sender::appendPong(Buffer* out, std::string_view payload) {
  appendControl(out, Opcode::kPong, payload);
}

void Sender::appendControl(Buffer* out, Opcode opcode, std::string_view payload) {
  appendFrame(out, true, false, opcode, payload.substr(0, kMaxControlPayload), nextMaskKey());
}

void Sender::appendClose(Buffer* out, uint16_t code, std::string_view reason) {
  if (code == close_code::kNoStatus) {
    appendControl(out, Opcode::kClose, {});
    return;
  }
  constexpr size_t kMaxReason = kMaxControlPayload - 2;
  if (reason.size() > kMaxReason) {
    // Cut before the code point that would straddle the limit: back over
    // continuation bytes (10xxxxxx) to that code point's lead byte.
    size_t cut = kMaxReason;
    while (cut > 0 && (static_cast<unsigned char>(reason[cut]) & 0xc0) == 0x80) --cut;
    reason = reason.substr(0, cut);
  }
  char body[kMaxControlPayload];
  body[0] = static_cast<char>(code >> 8);
  body[1] = static_cast<char>(code & 0xff);
  // A default string_view has a null data(): memcpy must not see it even
  // with a zero length.
  if (!reason.empty()) std::memcpy(body + 2, reason.data(), reason.size());
  appendControl(out, Opcode::kClose, {body, 2 + reason.size()});
}

}  // namespace libnet::ws
