// grpc::MessageReader: de-frames the messages of one direction of a call
// (the DATA of one HTTP/2 stream) as its bytes come, in pieces that may split
// a 5-byte prefix or a payload anywhere; decompresses those flagged
// compressed with the encoding the peer announced. Sans-I/O; one reader per
// call direction, used by one thread at a time.
//
// Memory: a message's length is checked against maxMessageBytes from its
// prefix, before any of its payload is held, so a peer announcing a huge
// message fails at once; a compressed message may inflate to at most
// maxMessageBytes (gzipDecompress stops there). The reader holds at most
// the partial message plus the complete ones not yet taken by next().
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "net/grpc/Status.h"

namespace libnet::grpc {

class MessageReader {
 public:
  enum class Error {
    kNone,
    // A message (as sent, or once decompressed) over maxMessageBytes.
    kTooLarge,
    // The compressed flag set on a call without a grpc-encoding.
    kCompressedWithoutEncoding,
    // A compressed message that does not decompress.
    kBadCompression,
    // A compressed message that decompresses to more than maxMessageBytes.
    kDecompressedTooLarge,
    // A flag byte other than 0 (plain) or 1 (compressed).
    kBadFlag,
  };
  struct Limits {
    size_t maxMessageBytes = 4 * 1024 * 1024;
  };

  // `encoding`: the grpc-encoding the peer announced ("" or "identity":
  // none; "gzip"). An encoding supportedEncoding() refuses is the caller's
  // to answer; the reader treats it as none.
  MessageReader(Limits limits, std::string encoding);

  // Takes the next bytes; the messages they complete are queued for next().
  // False once an error is known (error() says which): sticky, nothing more
  // is taken.
  bool feed(std::string_view bytes);
  // The next complete message (decompressed), or nullopt.
  [[nodiscard]] std::optional<std::string> next();
  // Whether the message next() returned last came compressed (flag byte 1).
  [[nodiscard]] bool lastCompressed() const { return lastCompressed_; }
  [[nodiscard]] Error error() const { return error_; }
  // Bytes held: a partial message, plus complete ones not yet taken.
  [[nodiscard]] size_t buffered() const;
  // True between messages (no partial prefix or payload held): the stream
  // may end here.
  [[nodiscard]] bool atBoundary() const;

  // False for an encoding the reader cannot decode ("deflate", "snappy",
  // anything but "", "identity" and "gzip"): the caller answers
  // UNIMPLEMENTED.
  [[nodiscard]] static bool supportedEncoding(std::string_view encoding);

 private:
  size_t takePrefix(std::string_view bytes);
  size_t takePayload(std::string_view bytes);
  void completeMessage();
  void fail(Error error);

  Limits limits_;
  bool gzip_;
  Error error_ = Error::kNone;
  // The prefix of the message under way (prefixHave_ of its 5 bytes).
  unsigned char prefix_[5] = {};
  size_t prefixHave_ = 0;
  // Set once the prefix is complete: the payload being collected.
  bool inPayload_ = false;
  bool compressed_ = false;
  size_t payloadLength_ = 0;
  std::string payload_;
  std::deque<std::string> ready_;
  std::deque<bool> readyCompressed_;  // each of ready_'s flags
  bool lastCompressed_ = false;
  size_t readyBytes_ = 0;
};

// The status a call ends with for `error` (kTooLarge, kDecompressedTooLarge:
// RESOURCE_EXHAUSTED; kCompressedWithoutEncoding, kBadCompression, kBadFlag:
// INTERNAL; kNone: OK).
[[nodiscard]] StatusCode errorStatus(MessageReader::Error error);
// Its grpc-message text.
[[nodiscard]] std::string_view errorText(MessageReader::Error error);

}  // namespace libnet::grpc
