// Sender: the sending half of a WebSocket connection: appends whole frames
// to the caller's output Buffer. A client masks every frame with a fresh key
// from a per-connection PRNG (seeded once from getrandom(), RFC 6455 10.3
// only asks that keys be unpredictable to the page script, not to the
// network); a server never masks. With negotiated permessage-deflate,
// messages of at least DeflateOptions::minMessageSize bytes are compressed
// (RSV1 on the first frame), straight into the output buffer: the Sender
// keeps no buffer of its own, only the Deflater's zlib state. No I/O; one
// per connection, used on that connection's thread only (not thread-safe).
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

namespace libnet::ws {

class Sender {
 public:
  // `options` supplies the compression level and minMessageSize when
  // `deflate` (the negotiated parameters) is set.
  explicit Sender(Role self, const std::optional<DeflateParams>& deflate = std::nullopt,
                  const DeflateOptions& options = {});
  ~Sender();
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // Appends a whole message: one frame when fragmentSize is 0, else frames
  // of at most fragmentSize payload bytes (of the compressed message when it
  // is compressed). Text must be valid UTF-8; that is the caller's promise.
  void appendMessage(Buffer* out, MessageType type, std::string_view payload,
                     size_t fragmentSize = 0);
  // Streams a message in pieces, never compressed: the first call of a
  // message carries its type, the last has fin set. No other data message
  // may start until the fin piece (control frames may go between).
  void appendFragment(Buffer* out, MessageType type, std::string_view piece, bool fin);
  // Control frames; payload truncated to 125 bytes.
  void appendPing(Buffer* out, std::string_view payload = {});
  void appendPong(Buffer* out, std::string_view payload = {});
  // A close frame with `code` and `reason` (truncated on a UTF-8 boundary to
  // fit 123 bytes). code 1005 (close_code::kNoStatus) sends an empty body.
  void appendClose(Buffer* out, uint16_t code, std::string_view reason = {});

  // Whether appendFragment() has started a message that is not finished.
  [[nodiscard]] bool inFragmentedMessage() const { return streaming_; }

  // Heap memory held: the Deflater's zlib state (none without deflate).
  [[nodiscard]] size_t heldMemory() const { return deflater_ ? deflater_->heldMemory() : 0; }

 private:
  std::optional<uint32_t> nextMaskKey();
  void appendFrames(Buffer* out, Opcode opcode, bool rsv1, std::string_view payload,
                    size_t fragmentSize);
  void appendCompressed(Buffer* out, Opcode opcode, std::string_view payload, size_t fragmentSize);
  void appendControl(Buffer* out, Opcode opcode, std::string_view payload);

  Role self_;
  std::unique_ptr<Deflater> deflater_;
  size_t minCompressSize_ = 0;
  bool streaming_ = false;
  uint64_t rngState_[2];
};

}  // namespace libnet::ws
