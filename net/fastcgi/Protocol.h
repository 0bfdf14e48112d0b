// The constants of FastCGI 1.0 (the specification by Open Market, 1996): the
// record header, its types, the roles and flags of FCGI_BEGIN_REQUEST and
// the protocol statuses of FCGI_END_REQUEST. Values only; RecordEncoder
// writes records and RecordDecoder reads them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace libnet::fastcgi {

inline constexpr uint8_t kVersion1 = 1;
inline constexpr size_t kHeaderLength = 8;
// A record's content length is 16 bits.
inline constexpr size_t kMaxContentLength = 65535;
// 0 is the management records' request id; a responder's requests use others.
inline constexpr uint16_t kNullRequestId = 0;

enum class RecordType : uint8_t {
  kBeginRequest = 1,
  kAbortRequest = 2,
  kEndRequest = 3,
  kParams = 4,
  kStdin = 5,
  kStdout = 6,
  kStderr = 7,
  kData = 8,
  kGetValues = 9,
  kGetValuesResult = 10,
  kUnknownType = 11,
};
inline constexpr uint8_t kMaxRecordType = 11;

enum class Role : uint16_t { kResponder = 1, kAuthorizer = 2, kFilter = 3 };

// FCGI_BEGIN_REQUEST flags: keep the connection open after the request.
inline constexpr uint8_t kKeepConn = 1;

enum class ProtocolStatus : uint8_t {
  kRequestComplete = 0,
  kCantMultiplexConn = 1,
  kOverloaded = 2,
  kUnknownRole = 3,
};

}  // namespace libnet::fastcgi
