// Receiver: the receiving half of a WebSocket connection (RFC 6455, with
// permessage-deflate when negotiated). It consumes bytes from the caller's
// Buffer and yields one event at a time; no I/O, one per connection, used on
// that connection's thread only (not thread-safe).
//
//   for (;;) {
//     switch (receiver.next(&input)) {
//       case Receiver::Event::kNeedMore: return;            // wait for bytes
//       case Receiver::Event::kMessage: onMessage(receiver.messageType(),
//                                                 receiver.payload()); break;
//       case Receiver::Event::kPing: sendPong(receiver.payload()); break;
//       case Receiver::Event::kPong: break;
//       case Receiver::Event::kClose: echo the close (closeCode(), closeReason()); return;
//       case Receiver::Event::kError: send a close with closeCode(), error(); return;
//     }
//   }
//
// Bytes are consumed as they arrive: the header once complete, payload bytes
// copied out (and unmasked) right away, so the caller's buffer never has to
// hold a whole frame. Only an incomplete header (under 14 bytes) is left in
// it, and must come first in the next call's Buffer if that is another one.
// A message in one frame is copied once, straight into payload(), whose
// capacity for the frame is reserved when the header arrives (so within the
// limits, not only as bytes come).
//
// Memory: a message longer than 1 KiB (or fragmented, or compressed) is
// assembled in storage borrowed from a BufferPool when one is given (the
// loop's: WebSocket and CoroWebSocket pass it), and given back when the
// message is done, so an idle receiver holds no large storage whatever the
// largest message it received, while a busy one allocates nothing per
// message (buffers change hands); shorter messages use small storage of its
// own, at most BufferPool::kSmallCapacity, kept. Without a pool, storage
// beyond that is freed when the message is done. While a message is in
// flight its storage is at most maxMessageBytes (plus one Inflater::kChunk
// when inflating): fragments and inflated output grow it geometrically, but
// never past the limit.
// Every receive rule
// of RFC 6455 is enforced; a violation is kError with the close code to send
// (1002 protocol error, 1007 invalid UTF-8 or invalid deflate data, 1009
// too big) and a reason. A frame whose header announces more than
// maxFrameBytes is refused from the header alone. After kClose or kError the
// receiver is done: next() consumes nothing and returns the same event.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "net/Buffer.h"
#include "net/websocket/Deflate.h"
#include "net/websocket/Frame.h"
#include "net/websocket/Utf8.h"

namespace libnet {
class BufferPool;
}

namespace libnet::ws {

struct ReceiverLimits {
  // One frame's payload as announced in its header (compressed size).
  size_t maxFrameBytes = 16 * 1024 * 1024;
  // A whole message: the sum of its fragments, after inflating when
  // compressed.
  size_t maxMessageBytes = 16 * 1024 * 1024;
};

class Receiver {
 public:
  enum class Event { kNeedMore, kMessage, kPing, kPong, kClose, kError };
  using Limits = ReceiverLimits;

  // `self` is the side that receives: a server requires masked frames, a
  // client unmasked ones. `deflate`: the negotiated permessage-deflate
  // parameters (RSV1 is a protocol error without them).
  // `pool` (optional; used on this thread only) lends the storage of
  // messages.
  explicit Receiver(Role self, ReceiverLimits limits = {},
                    const std::optional<DeflateParams>& deflate = std::nullopt,
                    BufferPool* pool = nullptr);
  ~Receiver();
  Receiver(const Receiver&) = delete;
  Receiver& operator=(const Receiver&) = delete;

  // Consumes what it can from `input` and returns the next event, or
  // kNeedMore once every byte given is consumed without completing one.
  [[nodiscard]] Event next(Buffer* input);

  // kMessage: text or binary.
  [[nodiscard]] MessageType messageType() const { return messageType_; }
  // kMessage: the message; kPing/kPong: the control payload. Valid until the
  // next call of next() or releaseMessage(), which give the message's
  // storage back.
  [[nodiscard]] std::string_view payload() const {
    return controlEvent_ ? std::string_view(control_) : payload_.view();
  }
  // Done with the message payload() shows: its storage goes back now (to
  // the pool, or freed) rather than at the next call of next(), which does
  // it too. For a caller that keeps a copy and may not call next() soon.
  void releaseMessage();
  // kClose: the peer's status code (1005 when the close frame had no body).
  // kError: the code to send in our close frame.
  [[nodiscard]] uint16_t closeCode() const { return closeCode_; }
  // kClose: the peer's reason (valid UTF-8, possibly empty).
  [[nodiscard]] const std::string& closeReason() const { return text_; }
  // kError: what was wrong, for the close frame's reason and the log.
  [[nodiscard]] const std::string& error() const { return text_; }
  // Whether kClose or kError has been returned.
  [[nodiscard]] bool done() const { return done_ != Event::kNeedMore; }

  // Heap memory held: message and control frame storage, and the
  // Inflater's zlib state.
  [[nodiscard]] size_t heldMemory() const;

 private:
  enum class Phase { kHeader, kPayload };

  // false while the header is incomplete; else consumes it and sets *event
  // (kNeedMore when the frame is acceptable).
  bool readHeader(Buffer* input, Event* event);
  Event checkHeader(uint8_t first, uint64_t length);
  Event startPayload(bool rsv1);
  Event readPayload(Buffer* input);
  Event consumeData(const char* data, size_t length);
  Event consumeCompressed(const char* data, size_t length);
  // The inflater's verdict on what it appended to payload_ from `old` on:
  // kNeedMore when all is well (and a text message's new bytes are valid
  // UTF-8 so far), else the failure.
  Event checkInflated(Inflater::Result result, size_t old);
  Event endFrame();
  Event endControl();
  Event endClose();
  Event fail(uint16_t code, const char* reason);

  Role self_;
  ReceiverLimits limits_;
  BufferPool* pool_;
  std::unique_ptr<Inflater> inflater_;
  Phase phase_ = Phase::kHeader;
  Event done_ = Event::kNeedMore;

  // The frame being read.
  Opcode opcode_ = Opcode::kContinuation;
  bool fin_ = false;
  bool masked_ = false;
  uint32_t maskKey_ = 0;
  uint64_t frameLength_ = 0;
  uint64_t frameRead_ = 0;

  // The data message being assembled.
  bool inMessage_ = false;
  bool compressed_ = false;
  MessageType messageType_ = MessageType::kBinary;
  Utf8Validator utf8_;
  // Empty between messages: storage only while one is assembled or shown.
  Buffer payload_{0};
  // A control frame's payload (it may arrive between a message's fragments).
  std::string control_;

  // Whether payload() shows control_ (else payload_).
  bool controlEvent_ = false;
  // kMessage was returned: payload_ is given back at the next call.
  bool messageShown_ = false;
  uint16_t closeCode_ = 0;
  std::string text_;
};

}  // namespace libnet::ws
