// fastcgi::RecordEncoder: writes the records of one FastCGI request (a web
// server's side, and a test application's): FCGI_BEGIN_REQUEST, the
// FCGI_PARAMS name-value pairs (1- and 4-byte lengths), stream records
// (FCGI_STDIN, FCGI_STDOUT, FCGI_STDERR) cut at 65535 bytes, their empty
// closing record, FCGI_END_REQUEST and FCGI_ABORT_REQUEST. Each record's
// content is padded to a multiple of 8 bytes, as the specification
// recommends. Appends to a string; no state but the request id, so any
// thread may use its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/fastcgi/Protocol.h"

namespace libnet::fastcgi {

using Param = std::pair<std::string, std::string>;
using ParamList = std::vector<Param>;

class RecordEncoder {
 public:
  explicit RecordEncoder(uint16_t requestId) : requestId_(requestId) {}

  void beginRequest(std::string* out, Role role, bool keepConn) const;
  // All pairs, then the empty record that ends the stream.
  void params(std::string* out, const ParamList& params) const;
  // `data` as records of `type`, each at most kMaxContentLength; nothing for
  // empty data (an empty record would end the stream).
  void stream(std::string* out, RecordType type, std::string_view data) const;
  // The empty record that ends a stream.
  void endStream(std::string* out, RecordType type) const;
  void endRequest(std::string* out, uint32_t appStatus, ProtocolStatus status) const;
  void abortRequest(std::string* out) const;

  // One record, as is (tests write broken ones through it too). `content` at
  // most kMaxContentLength.
  void record(std::string* out, RecordType type, std::string_view content) const;

  // A name-value pair's bytes: lengths under 128 in one byte, others in four.
  static void appendNameValue(std::string* out, std::string_view name, std::string_view value);

 private:
  uint16_t requestId_;
};

}  // namespace libnet::fastcgi
