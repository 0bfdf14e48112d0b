#include "net/websocket/Receiver.h"

#include <algorithm>
#include <cstring>

#include "net/BufferPool.h"
#include "net/websocket/GrowWithin.h"

namespace libnet::ws {

namespace {

// A message in one frame this long or shorter is assembled in the
// receiver's own storage, which it keeps (it is small: BufferPool::reclaim()
// leaves it); a longer one, a fragmented or a compressed one (whose size
// is not known yet) in storage borrowed from the pool. Small messages then
// cost the pool nothing per message.
constexpr size_t kOwnMessageBytes = BufferPool::kSmallCapacity - Buffer::kCheapPrepend;

// Masked compressed bytes are unmasked into a stack buffer of this size on
// their way to the inflater, a piece at a time: no buffer of the
// receiver's own grows with what one read delivers.
constexpr size_t kUnmaskPiece = 16 * 1024;

bool isKnownOpcode(uint8_t opcode) { return opcode <= 2 || (opcode >= 8 && opcode <= 10); }

// Heap bytes behind a string (none while it fits its inline buffer).
size_t heapBytes(const std::string& s) {
  return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;
}

}  // namespace

Receiver::Receiver(Role self, ReceiverLimits limits, const std::optional<DeflateParams>& deflate,
                   BufferPool* pool)
    : self_(self), limits_(limits), pool_(pool) {
  if (deflate) inflater_ = std::make_unique<Inflater>(self, *deflate);
}

Receiver::~Receiver() = default;

size_t Receiver::heldMemory() const {
  return payload_.capacity() + heapBytes(control_) + heapBytes(text_) +
         (inflater_ ? inflater_->heldMemory() : 0);
}

void Receiver::releaseMessage() {
  messageShown_ = false;
  payload_.retrieveAll();
  if (payload_.capacity() <= BufferPool::kSmallCapacity) return;  // small: kept
  if (pool_ != nullptr) {
    pool_->reclaim(&payload_);
  } else {
    payload_ = Buffer(0);
  }
}

Receiver::Event Receiver::next(Buffer* input) {
  if (messageShown_) releaseMessage();
  if (done_ != Event::kNeedMore) return done_;
  for (;;) {
    if (phase_ == Phase::kHeader) {
      Event event = Event::kNeedMore;
      if (!readHeader(input, &event)) return Event::kNeedMore;
      if (event != Event::kNeedMore) return event;
      phase_ = Phase::kPayload;
    }
    Event event = readPayload(input);
    if (event != Event::kNeedMore) return event;
    if (phase_ == Phase::kPayload) return Event::kNeedMore;  // the rest is still on its way
  }
}

bool Receiver::readHeader(Buffer* input, Event* event) {
  const size_t available = input->readableBytes();
  if (available < 2) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(input->peek());
  const bool masked = (p[1] & 0x80) != 0;
  const uint8_t length7 = p[1] & 0x7f;
  const size_t extended = length7 == 126 ? 2 : (length7 == 127 ? 8 : 0);
  const size_t headerSize = 2 + extended + (masked ? 4 : 0);
  if (available < headerSize) return false;
  uint64_t length = length7;
  if (extended > 0) {
    length = 0;
    for (size_t i = 0; i < extended; ++i) length = (length << 8) | p[2 + i];
  }
  uint32_t key = 0;
  for (size_t i = 0; i < (masked ? 4u : 0u); ++i) key = (key << 8) | p[2 + extended + i];
  const uint8_t first = p[0];
  input->retrieve(headerSize);
  masked_ = masked;
  maskKey_ = key;
  *event = checkHeader(first, length);
  if (*event == Event::kNeedMore) *event = startPayload((first & 0x40) != 0);
  return true;
}

Receiver::Event Receiver::checkHeader(uint8_t first, uint64_t length) {
  fin_ = (first & 0x80) != 0;
  const bool rsv1 = (first & 0x40) != 0;
  const uint8_t opcode = first & 0x0f;
  if (first & 0x30) return fail(close_code::kProtocolError, "reserved bits set");
  if (!isKnownOpcode(opcode)) return fail(close_code::kProtocolError, "reserved opcode");
  opcode_ = static_cast<Opcode>(opcode);
  const bool control = isControl(opcode_);
  if (rsv1 && (!inflater_ || control || opcode_ == Opcode::kContinuation)) {
    return fail(close_code::kProtocolError, "RSV1 set without a compressed message start");
  }
  if (masked_ != (self_ == Role::kServer)) {
    return fail(close_code::kProtocolError,
                masked_ ? "masked frame from the server" : "unmasked frame from the client");
  }
  if (length >> 63) return fail(close_code::kProtocolError, "frame length with the top bit set");
  if (control && !fin_) return fail(close_code::kProtocolError, "fragmented control frame");
  if (control && length > kMaxControlPayload) {
    return fail(close_code::kProtocolError, "control frame longer than 125 bytes");
  }
  if (opcode_ == Opcode::kClose && length == 1) {
    return fail(close_code::kProtocolError, "close frame with a 1-byte body");
  }
  if (opcode_ == Opcode::kContinuation && !inMessage_) {
    return fail(close_code::kProtocolError, "continuation frame without a message");
  }
  if ((opcode_ == Opcode::kText || opcode_ == Opcode::kBinary) && inMessage_) {
    return fail(close_code::kProtocolError, "new message before the last one ended");
  }
  if (length > limits_.maxFrameBytes) return fail(close_code::kMessageTooBig, "frame too big");
  frameLength_ = length;
  frameRead_ = 0;
  return Event::kNeedMore;
}

Receiver::Event Receiver::startPayload(bool rsv1) {
  if (isControl(opcode_)) {
    control_.clear();
    return Event::kNeedMore;
  }
  if (opcode_ != Opcode::kContinuation) {
    inMessage_ = true;
    compressed_ = rsv1;
    messageType_ = opcode_ == Opcode::kText ? MessageType::kText : MessageType::kBinary;
    payload_.retrieveAll();
    if (pool_ != nullptr && (compressed_ || !fin_ || frameLength_ > kOwnMessageBytes)) {
      pool_->lend(&payload_);
    }
    utf8_.reset();
  }
  if (compressed_) return Event::kNeedMore;  // the inflater checks the inflated size
  if (payload_.readableBytes() + frameLength_ > limits_.maxMessageBytes) {
    return fail(close_code::kMessageTooBig, "message too big");
  }
  // One allocation for the frame (none when the storage is large enough);
  // a message in fragments grows within its limit.
  growWithin(&payload_, static_cast<size_t>(frameLength_), limits_.maxMessageBytes);
  return Event::kNeedMore;
}

Receiver::Event Receiver::readPayload(Buffer* input) {
  const uint64_t left = frameLength_ - frameRead_;
  const size_t n = static_cast<size_t>(std::min<uint64_t>(left, input->readableBytes()));
  if (n > 0) {
    Event event;
    if (isControl(opcode_)) {
      const size_t old = control_.size();
      control_.append(input->peek(), n);
      if (masked_) maskPayload(control_.data() + old, n, maskKey_, frameRead_);
      event = Event::kNeedMore;
    } else if (compressed_) {
      event = consumeCompressed(input->peek(), n);
    } else {
      event = consumeData(input->peek(), n);
    }
    input->retrieve(n);
    frameRead_ += n;
    if (event != Event::kNeedMore) return event;
  }
  if (frameRead_ < frameLength_) return Event::kNeedMore;
  phase_ = Phase::kHeader;
  return endFrame();
}

// `data`: the frame's next payload bytes as they came (masked when masked_),
// copied into payload_ (room reserved by startPayload) and unmasked on the way.
Receiver::Event Receiver::consumeData(const char* data, size_t length) {
  growWithin(&payload_, length, limits_.maxMessageBytes);
  char* dest = payload_.beginWrite();
  if (masked_) {
    maskCopy(dest, data, length, maskKey_, frameRead_);
  } else {
    std::memcpy(dest, data, length);
  }
  payload_.hasWritten(length);
  if (messageType_ == MessageType::kText && !utf8_.feed({dest, length})) {
    return fail(close_code::kInvalidPayload, "invalid UTF-8 in a text message");
  }
  return Event::kNeedMore;
}

Receiver::Event Receiver::consumeCompressed(const char* data, size_t length) {
  if (!masked_) {
    const size_t old = payload_.readableBytes();
    return checkInflated(inflater_->feed({data, length}, &payload_, limits_.maxMessageBytes), old);
  }
  char piece[kUnmaskPiece];
  for (size_t done = 0; done < length;) {
    const size_t n = std::min(length - done, sizeof piece);
    maskCopy(piece, data + done, n, maskKey_, frameRead_ + done);
    const size_t old = payload_.readableBytes();
    const Event event =
        checkInflated(inflater_->feed({piece, n}, &payload_, limits_.maxMessageBytes), old);
    if (event != Event::kNeedMore) return event;
    done += n;
  }
  return Event::kNeedMore;
}

Receiver::Event Receiver::checkInflated(Inflater::Result result, size_t old) {
  switch (result) {
    case Inflater::Result::kOk:
      break;
    case Inflater::Result::kTooBig:
      return fail(close_code::kMessageTooBig, "message too big");
    case Inflater::Result::kCorrupt:
      return fail(close_code::kInvalidPayload, "invalid compressed data");
  }
  if (messageType_ == MessageType::kText && !utf8_.feed(payload_.view().substr(old))) {
    return fail(close_code::kInvalidPayload, "invalid UTF-8 in a text message");
  }
  return Event::kNeedMore;
}

Receiver::Event Receiver::endFrame() {
  if (isControl(opcode_)) return endControl();
  if (!fin_) return Event::kNeedMore;
  if (compressed_) {
    const size_t old = payload_.readableBytes();
    const Event event = checkInflated(inflater_->finish(&payload_, limits_.maxMessageBytes), old);
    if (event != Event::kNeedMore) return event;
  }
  if (messageType_ == MessageType::kText && !utf8_.complete()) {
    return fail(close_code::kInvalidPayload, "text message ends inside a UTF-8 sequence");
  }
  inMessage_ = false;
  controlEvent_ = false;
  messageShown_ = true;
  return Event::kMessage;
}

Receiver::Event Receiver::endControl() {
  controlEvent_ = true;
  if (opcode_ == Opcode::kPing) return Event::kPing;
  if (opcode_ == Opcode::kPong) return Event::kPong;
  return endClose();
}

Receiver::Event Receiver::endClose() {
  if (control_.empty()) {
    closeCode_ = close_code::kNoStatus;
    text_.clear();
  } else {
    const auto* p = reinterpret_cast<const unsigned char*>(control_.data());
    const auto code = static_cast<uint16_t>((p[0] << 8) | p[1]);
    if (!isSendableCloseCode(code)) return fail(close_code::kProtocolError, "invalid close code");
    std::string_view reason(control_.data() + 2, control_.size() - 2);
    if (!Utf8Validator::isValid(reason)) {
      return fail(close_code::kInvalidPayload, "invalid UTF-8 in the close reason");
    }
    closeCode_ = code;
    text_.assign(reason);
  }
  done_ = Event::kClose;
  releaseMessage();  // a message cut short by the close: nothing will read it
  return done_;
}

Receiver::Event Receiver::fail(uint16_t code, const char* reason) {
  closeCode_ = code;
  text_ = reason;
  done_ = Event::kError;
  releaseMessage();  // up to the limit, for a message refused as too big
  return done_;
}

}  // namespace libnet::ws
