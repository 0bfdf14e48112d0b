// The sans-I/O pieces of gRPC's wire format over HTTP/2 (the gRPC project's
// doc/PROTOCOL-HTTP2.md): the grpc-timeout header, grpc-message's percent
// encoding, the base64 of "-bin" metadata values, the checks on custom
// metadata, and the 5-byte prefix of each length-prefixed message. Pure
// functions: any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/Duration.h"

namespace libnet::grpc {

// grpc-timeout: "<1-8 digits><H|M|S|m|u|n>" (hours, minutes, seconds,
// milli-, micro-, nanoseconds). nullopt: malformed (no digits, more than 8,
// another unit, anything around them). The largest value (99999999H, about
// 11400 years) is saturated to what a Duration holds (about 292 years).
[[nodiscard]] std::optional<Duration> parseTimeout(std::string_view value);
// The shortest form that is exact, or, when none fits in 8 digits, the
// smallest value of the finest unit that fits that is not less than
// `timeout` (a deadline is never shortened). Negative or zero: "0n".
[[nodiscard]] std::string formatTimeout(Duration timeout);

// grpc-message: bytes outside 0x20-0x7E, and '%', become "%XX" (upper-case
// hex); UTF-8 text is encoded byte by byte.
[[nodiscard]] std::string percentEncode(std::string_view text);
// Lenient, as the protocol asks: an escape that is not '%' and two hex
// digits stays as it is.
[[nodiscard]] std::string percentDecode(std::string_view text);

// "-bin" metadata values: standard base64 (RFC 4648 section 4). Encoding
// pads with '='; decoding takes a value with or without its padding.
[[nodiscard]] std::string base64Encode(std::string_view bytes);
// nullopt: not base64 (a character outside the alphabet, a length of 4n+1,
// padding anywhere but the end, or non-zero bits after the last byte).
[[nodiscard]] std::optional<std::string> base64Decode(std::string_view text);

// A custom metadata key: non-empty, only [0-9a-z_.-]. Whether a key is
// reserved ("grpc-" prefixed, HTTP/2's own) is the caller's business.
[[nodiscard]] bool validMetadataKey(std::string_view key);
// The value for `key`: anything for a key ending in "-bin" (it is base64 on
// the wire), printable ASCII (0x20-0x7E) otherwise.
[[nodiscard]] bool validMetadataValue(std::string_view key, std::string_view value);
// True when `key` ends in "-bin".
[[nodiscard]] bool isBinaryKey(std::string_view key);

// The size of the prefix of each message: a compressed flag byte, then the
// payload's length, 4 bytes big-endian.
inline constexpr size_t kFramePrefixBytes = 5;
// Appends one message (its prefix, then `payload`) to *out. `compressed`:
// the payload is in the call's grpc-encoding. The payload must be shorter
// than 4 GiB, the most a prefix can say (the sender's message limit sees to
// it; asserted).
void appendFrame(std::string* out, std::string_view payload, bool compressed);

}  // namespace libnet::grpc
