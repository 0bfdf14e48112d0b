// FrameReader: splits the bytes a server sends (RFC 6455 frames, unmasked)
// into messages, fragmented or not, and control frames, as they arrive in
// pieces of any size. Without keepPayload it only counts a message's bytes,
// so that a load run without --verify copies nothing.
//
// Owned by one connection; single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wsload {

// What a FrameReader hands on; each call returns false to stop reading (the
// connection is being closed).
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // A whole data message: its opcode (text or binary), whether its first
  // frame had RSV1 (compressed), its payload bytes on the wire, and the
  // payload itself when the reader keeps payloads.
  virtual bool onMessage(int opcode, bool compressed, uint64_t wireBytes,
                         const std::string& payload) = 0;
  virtual bool onControl(int opcode, const std::string& payload) = 0;
};

class FrameReader {
 public:
  explicit FrameReader(bool keepPayload) : keepPayload_(keepPayload) {}

  // Consumes all n bytes unless a sink call stops it or the stream breaks
  // the protocol; false then, with error() saying which ("" for a stop).
  [[nodiscard]] bool feed(const uint8_t* data, size_t n, FrameSink& sink);
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  size_t takeHeader(const uint8_t* data, size_t n);
  bool startFrame();
  bool finishFrame(FrameSink& sink);

  bool keepPayload_;
  std::string error_;
  uint8_t header_[10] = {};
  size_t headerLength_ = 0;
  size_t headerNeed_ = 2;
  bool inPayload_ = false;
  uint64_t remaining_ = 0;
  int opcode_ = 0;
  bool fin_ = false;
  int messageOpcode_ = 0;  // 0: no message in progress
  bool messageCompressed_ = false;
  uint64_t messageBytes_ = 0;
  std::string message_;
  std::string control_;
};

}  // namespace wsload
