// fastcgi::RecordDecoder: reads FastCGI records out of a byte stream, one
// whole record at a time (at most 8 + 65535 + 255 bytes, so the caller's
// input buffer is bounded by that). Strict: a version other than 1, a
// record type outside 1..11, or a fixed-size record (BEGIN_REQUEST,
// END_REQUEST, ABORT_REQUEST, UNKNOWN_TYPE) of the wrong length is an
// error, reported as soon as the 8 header bytes are in, and the decoder
// stays failed (a stream that broke its framing cannot be trusted again).
// Also decodes FCGI_PARAMS name-value pairs and FCGI_END_REQUEST bodies.
// Not thread-safe; one per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/fastcgi/Protocol.h"
#include "net/fastcgi/RecordEncoder.h"

namespace libnet::fastcgi {

struct Record {
  RecordType type = RecordType::kUnknownType;
  uint16_t requestId = 0;
  // Points into the input given to decode(); valid as long as it is.
  std::string_view content;
};

struct EndRequest {
  uint32_t appStatus = 0;
  ProtocolStatus protocolStatus = ProtocolStatus::kRequestComplete;
};

class RecordDecoder {
 public:
  enum class Status { kRecord, kNeedMore, kError };

  // Looks at the front of `input`: kRecord fills `record` and `*consumed`
  // (header, content and padding: drop that many bytes after use);
  // kNeedMore wants more bytes (nothing consumed); kError: see error().
  Status decode(std::string_view input, Record* record, size_t* consumed);

  [[nodiscard]] bool failed() const { return !error_.empty(); }
  [[nodiscard]] const std::string& error() const { return error_; }

  // FCGI_PARAMS (or GET_VALUES) content: appends the pairs; false if a
  // length runs past the end.
  [[nodiscard]] static bool decodeNameValues(std::string_view content, ParamList* out);
  // FCGI_END_REQUEST content (8 bytes); false for another length or an
  // unknown protocol status.
  [[nodiscard]] static bool decodeEndRequest(std::string_view content, EndRequest* out);

 private:
  Status fail(std::string message);

  std::string error_;
};

}  // namespace libnet::fastcgi
