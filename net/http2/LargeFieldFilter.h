// http2::LargeFieldFilter: stands between a server connection's input and
// nghttp2, so that a header field too large for nghttp2's HPACK decoder is
// answered 431 on its stream instead of ending the whole connection.
//
// nghttp2 refuses any name or value longer than 64 KiB (NGHTTP2_HD_MAX_NV) as
// a compression error: GOAWAY COMPRESSION_ERROR, every stream of the
// connection lost, for one request's :path of 65 KiB. Such a field is past
// the header section limit anyway (SETTINGS_MAX_HEADER_LIST_SIZE), which RFC
// 9113 10.5.1 answers with 431 as long as the block is still decoded, to
// keep the HPACK state of both ends in step. This filter walks each header
// block (HEADERS and CONTINUATION frames) without decoding it, and replaces
// every string longer than the limit by a short stand-in with the same
// effect on the dynamic table: a literal the encoder added to the table is
// replaced by one too large for any table (which empties it, RFC 7541 4.4,
// as the original did); any other by a one-byte string. The frames are
// re-framed around the change, padding dropped; all other bytes pass
// unchanged, without a copy when nothing in them had to be held back.
//
// The stream of a block that had such a field is reported to `onLarge`, once
// per block, before nghttp2 sees the stand-in. Input it cannot make sense of
// (a frame larger than the default SETTINGS_MAX_FRAME_SIZE, a CONTINUATION
// out of place, a malformed integer) is passed on unchanged from there on,
// for nghttp2 to refuse.
//
// One connection's; not thread-safe. Internal to //net/http2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace libnet::http2 {

class LargeFieldFilter {
 public:
  // Strings longer than `maxString` are replaced; a header block longer than
  // `maxBlock` bytes on the wire is reported to `onTooLong` (the caller ends
  // the connection) and passed on.
  LargeFieldFilter(size_t maxString, size_t maxBlock, std::function<void(int32_t)> onLarge,
                   std::function<void()> onTooLong);

  // The bytes to give nghttp2 for `in`, in order, appended to `out`: views of
  // `in`, or of the filter's own buffers (valid until the next call). Bytes
  // of a header frame not yet complete are held until it is.
  void filter(std::string_view in, std::vector<std::string_view>* out);
  // Part of a header frame, or of a frame header, is held: the header
  // deadline should run.
  [[nodiscard]] bool holding() const { return !head_.empty() || !frame_.empty() || inBlock_; }

 private:
  // The walk through one header block, byte by byte, across its frames.
  enum class Step { kRepresentation, kInteger, kStringLength, kString };
  enum class Integer { kIndexed, kTableSize, kLiteralIndex, kStringLength };

  // Reads the frame header at `in` (or finishes one begun in a previous
  // call): false when more bytes are needed.
  bool takeFrameHeader(std::string_view in, size_t* pos);
  // A whole HEADERS or CONTINUATION frame (`frame`: its 9 bytes and payload,
  // in `in` or in built_).
  void headerFrame(std::string_view frame, std::vector<std::string_view>* out);
  // The fragment of a HEADERS frame without its padding and priority; false
  // when the frame is malformed.
  bool fragmentOf(std::string_view frame, std::string_view* fragment);
  // Walks `fragment`, appending what nghttp2 is to see to pending_; true if
  // it had to change anything.
  bool walk(std::string_view fragment);
  void walkByte(uint8_t byte);
  void integerDone();
  void stringTooLong();
  void startInteger(Integer kind, uint8_t byte, int prefixBits);
  // Emits pending_ up to `end` as one or more frames of the block.
  void emit(size_t end, bool endHeaders, std::vector<std::string_view>* out);
  void passOn(std::string_view bytes, std::vector<std::string_view>* out);

  const size_t maxString_;
  const size_t maxBlock_;
  std::function<void(int32_t)> onLarge_;
  std::function<void()> onTooLong_;

  size_t preface_ = 24;  // the client preface's bytes still to pass
  bool bypass_ = false;  // input past understanding: everything passes
  // The frame being read: its header (possibly begun in an earlier call),
  // then, for a header frame, its payload gathered across calls; for other
  // frames, the payload bytes still to pass.
  std::string head_;
  std::string frame_;
  size_t frameLength_ = 0;
  size_t skip_ = 0;

  // The header block being walked.
  bool inBlock_ = false;
  int32_t blockStream_ = 0;
  size_t blockBytes_ = 0;
  bool firstFrame_ = true;  // its HEADERS frame not emitted yet
  uint8_t headersFlags_ = 0;
  std::string priority_;  // the HEADERS frame's 5 priority bytes, if any
  bool largeReported_ = false;
  // The block's fragment bytes walked and not emitted yet; from lengthStart_
  // on, the bytes of a string length still being read (held back: they go
  // if the string is too long).
  std::string pending_;
  size_t lengthStart_ = 0;
  Step step_ = Step::kRepresentation;
  Integer integer_ = Integer::kIndexed;
  uint64_t value_ = 0;
  int shift_ = 0;
  bool indexing_ = false;     // the literal goes into the dynamic table
  bool literalName_ = false;  // its name is a string, not an index
  bool onName_ = false;       // the string being walked is the name
  uint64_t nameIndex_ = 0;
  std::string name_;  // a literal name, when short and not Huffman-coded
  bool nameKnown_ = false;
  uint64_t left_ = 0;      // bytes of the string still to walk
  bool dropping_ = false;  // ... and to drop (it was too long)
  bool changed_ = false;
  // Frames built for nghttp2, kept until the next call (a deque: the views
  // handed out stay valid as it grows).
  std::deque<std::string> built_;
};

}  // namespace libnet::http2
