// FrameCheck: reads what an HTTP/2 server wrote (the bytes a
// http2::ServerSession produced, in the pieces it produced them) and checks
// that it is a well-formed server stream: frames within 16384 bytes, the
// server's SETTINGS first, each frame type on the streams and with the
// lengths RFC 9113 allows, header blocks unbroken by other frames and
// decodable by an HPACK decoder that follows the server's encoder, one
// response HEADERS per client stream with a :status first and no
// connection-specific fields, DATA only after it and never more than its
// content-length, nothing on a stream the server ended, a graceful GOAWAY's
// last stream never rising and nothing after a GOAWAY that carried an error.
//
// The first broken rule is kept in error(); later bytes are ignored. The
// fuzz target aborts on it; the replay test feeds broken streams to show
// that each check can fail. One thread at a time; not copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

struct nghttp2_hd_inflater;

namespace libnet::http2::fuzz {

class FrameCheck {
 public:
  // The largest frame payload the server may send: SETTINGS_MAX_FRAME_SIZE
  // starts there and the server never uses a larger one.
  static constexpr size_t kMaxPayload = 16384;
  static constexpr size_t kFrameHeader = 9;

  FrameCheck();
  ~FrameCheck();
  FrameCheck(const FrameCheck&) = delete;
  FrameCheck& operator=(const FrameCheck&) = delete;

  // The next bytes the server wrote.
  void take(std::string_view bytes);

  // Empty while every rule held.
  [[nodiscard]] const std::string& error() const { return error_; }
  // The bytes taken so far end where a frame ends.
  [[nodiscard]] bool atFrameBoundary() const { return partial_.empty(); }
  // DATA payload over all streams, padding not counted.
  [[nodiscard]] uint64_t dataBytes() const { return dataBytes_; }
  [[nodiscard]] size_t frames() const { return frames_; }
  // The lowest last-stream-id of the GOAWAY frames sent, and the last
  // GOAWAY's error code; nullopt before the first.
  [[nodiscard]] std::optional<uint32_t> lowestGoAwayLast() const { return goAwayLowest_; }
  [[nodiscard]] std::optional<uint32_t> goAwayError() const { return goAwayError_; }
  // The highest stream a response HEADERS was sent on (0: none).
  [[nodiscard]] uint32_t highestAnswered() const { return highestAnswered_; }

 private:
  struct Head {
    uint32_t length;
    uint8_t type;
    uint8_t flags;
    uint32_t stream;
  };
  // What the server has sent on one stream.
  struct Stream {
    bool headers = false;
    bool ended = false;  // END_STREAM or RST_STREAM sent
    std::optional<uint64_t> contentLength;
    uint64_t data = 0;
  };

  void frame(const Head& head, std::string_view payload);
  bool framing(const Head& head);
  bool controlFrame(const Head& head, std::string_view payload);
  void streamFrame(const Head& head, std::string_view payload);
  void headersFrame(const Head& head, std::string_view payload);
  void dataFrame(const Head& head, std::string_view payload);
  void headerBlock();
  bool decodeField(std::string_view name, std::string_view value, bool first);
  void fail(std::string what);

  nghttp2_hd_inflater* inflater_ = nullptr;
  std::string error_;
  std::string partial_;  // a frame not yet whole
  size_t frames_ = 0;
  uint64_t dataBytes_ = 0;
  std::unordered_map<uint32_t, Stream> streams_;
  // A header block that has not ended: its stream and fragments so far.
  uint32_t blockStream_ = 0;
  bool blockEndsStream_ = false;
  std::string block_;
  std::optional<uint32_t> goAwayLowest_;
  std::optional<uint32_t> goAwayError_;
  uint32_t highestAnswered_ = 0;
};

}  // namespace libnet::http2::fuzz
