#include "net/websocket/Sender.h"

#include <sys/random.h>

#include <algorithm>
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

// A compressed message laid out as frames, in place: where each frame's
// payload is, with `count` frames of `piece` bytes but the last.
struct FrameLayout {
  size_t length;  // the payload, all frames together
  size_t piece;
  size_t count;
  size_t header;      // each frame's header but the last one's
  size_t lastHeader;  // the last frame's

  FrameLayout(size_t payloadLength, size_t fragmentSize, bool masked)
      : length(payloadLength),
        piece(fragmentSize == 0 ? payloadLength : std::min(fragmentSize, payloadLength)),
        count((payloadLength + piece - 1) / piece),
        header(frameHeaderSize(piece, masked)),
        lastHeader(frameHeaderSize(size(count - 1), masked)) {}

  [[nodiscard]] size_t size(size_t i) const {
    return i + 1 < count ? piece : length - (count - 1) * piece;
  }
  // Where frame i's payload starts: behind the headers and payloads before it.
  [[nodiscard]] size_t at(size_t i) const {
    return i + 1 < count ? (i + 1) * header + i * piece
                         : (count - 1) * (header + piece) + lastHeader;
  }
  [[nodiscard]] size_t total() const { return at(count - 1) + size(count - 1); }
};

// Moves the payload bytes at data + kMaxFrameHeader (the room left for one
// header in front of them) to their places in `layout`, each byte once.
// Frames that move back (their headers take less room than they had) go
// first, front to back, then those that move forward, back to front, so
// that no move overwrites bytes still to be moved.
void spreadPayload(char* data, const FrameLayout& layout) {
  auto from = [&](size_t i) { return kMaxFrameHeader + i * layout.piece; };
  size_t forward = 0;
  while (forward < layout.count && layout.at(forward) <= from(forward)) ++forward;
  for (size_t i = 0; i < forward; ++i) {
    std::memmove(data + layout.at(i), data + from(i), layout.size(i));
  }
  for (size_t i = layout.count; i-- > forward;) {
    std::memmove(data + layout.at(i), data + from(i), layout.size(i));
  }
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
    appendCompressed(out, dataOpcode(type), payload, fragmentSize);
  } else {
    appendFrames(out, dataOpcode(type), false, payload, fragmentSize);
  }
}

// The message is deflated straight into `out`, behind room for the longest
// header; once its compressed length is known, the frames' headers are
// written in front of their payloads, moved into place (a single frame's
// by the few bytes its header takes less than the room). Moving the
// compressed bytes costs a fraction of compressing them, and no buffer of
// the message's compressed size is kept (or sized to deflate's worst case).
void Sender::appendCompressed(Buffer* out, Opcode opcode, std::string_view payload,
                              size_t fragmentSize) {
  const size_t start = out->readableBytes();
  out->ensureWritableBytes(kMaxFrameHeader);
  out->hasWritten(kMaxFrameHeader);
  deflater_->compress(payload, out);
  const bool masked = self_ == Role::kClient;
  const FrameLayout layout(out->readableBytes() - start - kMaxFrameHeader, fragmentSize, masked);
  const size_t used = out->readableBytes();
  const size_t needed = start + layout.total();
  if (needed > used) {
    out->ensureWritableBytes(needed - used);
    out->hasWritten(needed - used);
  }
  // The readable bytes, writable: `out` owns them (ensureWritableBytes()
  // turned any view into storage of its own).
  char* const data = out->beginWrite() - out->readableBytes() + start;
  spreadPayload(data, layout);
  for (size_t i = 0; i < layout.count; ++i) {
    const std::optional<uint32_t> key = nextMaskKey();
    char* const at = data + layout.at(i);
    const size_t size = layout.size(i);
    const size_t header = i + 1 < layout.count ? layout.header : layout.lastHeader;
    writeFrameHeader(at - header, i + 1 == layout.count, i == 0,
                     i == 0 ? opcode : Opcode::kContinuation, size, key);
    if (key) maskPayload(at, size, *key);
  }
  if (needed < used) out->unwrite(used - needed);
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
