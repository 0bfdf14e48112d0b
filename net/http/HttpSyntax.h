// Line and number syntax shared by the request parser (HttpParser) and the
// response parser (HttpResponseParser): line ends, decimal lengths, chunk-size
// lines, and the cap on a body's reserved capacity. Private to //net/http
// (target :syntax, visible to this package only). Pure functions: any
// thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "net/http/HttpChars.h"

namespace libnet::http::detail {

// A chunk-size line is a hex number plus extensions that are ignored. No
// real peer comes near this bound, but without one a peer could make the
// parser hold an endless line.
inline constexpr size_t kMaxChunkSizeLine = 4096;

// A stored body's capacity reserved up front from Content-Length, and the
// most a parser lets its body keep for the next message. Capped so that a
// peer announcing a large body and sending nothing, or an idle keep-alive
// connection after one large body, does not pin that much memory; beyond it
// the string grows as bytes arrive.
inline constexpr size_t kMaxBodyReserve = 64 * 1024;

// The line from p to the '\n' at lf, without the line end (CRLF or bare LF).
[[nodiscard]] inline std::string_view lineBefore(const char* p, const char* lf) {
  const char* e = lf;
  if (e > p && e[-1] == '\r') --e;
  return {p, static_cast<size_t>(e - p)};
}

// The '\n' ending the line that starts at p, or nullptr. *scanned remembers
// how far an incomplete line was searched: the caller leaves the line at the
// front of its next buffer, and a line arriving a byte at a time is not
// searched again from its start.
[[nodiscard]] inline const char* findLineEnd(const char* p, const char* end, size_t* scanned) {
  const auto available = static_cast<size_t>(end - p);
  // min() guards against a caller that dropped the partial line after all.
  const char* from = p + std::min(*scanned, available);
  const void* lf = std::memchr(from, '\n', static_cast<size_t>(end - from));
  if (lf == nullptr) {
    *scanned = available;
    return nullptr;
  }
  *scanned = 0;
  return static_cast<const char*>(lf);
}

// The chunk-size line that starts at p. kDone sets *line (without its line
// end) and moves p past it; kNeedMore while its end has not arrived (see
// findLineEnd() for *scanned); kTooLong once it is longer than
// kMaxChunkSizeLine, whether or not its end has arrived.
enum class ChunkSizeLine : uint8_t { kNeedMore, kDone, kTooLong };
[[nodiscard]] inline ChunkSizeLine takeChunkSizeLine(const char*& p, const char* end,
                                                     size_t* scanned, std::string_view* line) {
  const char* lf = findLineEnd(p, end, scanned);
  if (lf == nullptr) {
    if (static_cast<size_t>(end - p) + 1 > kMaxChunkSizeLine) return ChunkSizeLine::kTooLong;
    return ChunkSizeLine::kNeedMore;
  }
  if (static_cast<size_t>(lf + 1 - p) > kMaxChunkSizeLine) return ChunkSizeLine::kTooLong;
  *line = lineBefore(p, lf);
  p = lf + 1;
  return ChunkSizeLine::kDone;
}

// The line end after a chunk's data (CRLF, or a bare LF), looked at byte by
// byte rather than as a line, so that a peer that sends data where the line
// end belongs is refused at once instead of being buffered until a '\n'
// shows up. kDone moves p past it.
enum class ChunkEnd : uint8_t { kNeedMore, kDone, kBad };
[[nodiscard]] inline ChunkEnd consumeChunkEnd(const char*& p, const char* end) {
  if (p == end) return ChunkEnd::kNeedMore;
  if (*p == '\n') {
    ++p;
    return ChunkEnd::kDone;
  }
  if (*p != '\r') return ChunkEnd::kBad;
  if (end - p < 2) return ChunkEnd::kNeedMore;
  if (p[1] != '\n') return ChunkEnd::kBad;
  p += 2;
  return ChunkEnd::kDone;
}

[[nodiscard]] inline bool isDigit(char c) { return c >= '0' && c <= '9'; }

[[nodiscard]] inline unsigned hexValue(char c) {
  if (isDigit(c)) return static_cast<unsigned>(c - '0');
  return static_cast<unsigned>(toLowerAscii(c) - 'a' + 10);
}

// What reading a length (Content-Length, a chunk size, a port) gave.
// kOverflow: the value is 2^64 or more (does not fit a size_t). It is never
// clamped to SIZE_MAX: a body read with no memory limit (streamed,
// discarded) would then take the bytes that follow as body, so every caller
// refuses it at once (RFC 9112 7.1: guard against integer overflow).
enum class NumberParse : uint8_t { kValid, kInvalid, kOverflow };

// Decimal digits only (no sign, no spaces inside); leading zeros are fine.
[[nodiscard]] inline NumberParse parseDecimal(std::string_view s, size_t* out) {
  if (s.empty()) return NumberParse::kInvalid;
  size_t v = 0;
  bool overflow = false;
  for (char c : s) {
    if (!isDigit(c)) return NumberParse::kInvalid;
    const auto d = static_cast<size_t>(c - '0');
    if (v > (SIZE_MAX - d) / 10) overflow = true;
    if (!overflow) v = v * 10 + d;
  }
  if (overflow) return NumberParse::kOverflow;
  *out = v;
  return NumberParse::kValid;
}

// A Content-Length value: one length, or a list of identical ones ("42, 42",
// from a proxy joining duplicates, RFC 9112 6.3). kInvalid for anything
// else; kOverflow when a value is valid but too large, and none is invalid.
[[nodiscard]] inline NumberParse parseContentLength(std::string_view value, size_t* out) {
  bool invalid = false;
  bool overflow = false;
  bool any = false;
  size_t length = 0;
  forEachListElement(value, [&](std::string_view element) {
    size_t v = 0;
    switch (parseDecimal(element, &v)) {
      case NumberParse::kInvalid:
        invalid = true;
        break;
      case NumberParse::kOverflow:
        overflow = true;
        break;
      case NumberParse::kValid:
        if (any && v != length) invalid = true;
        length = v;
        any = true;
        break;
    }
  });
  if (invalid || (!any && !overflow)) return NumberParse::kInvalid;
  if (overflow) return NumberParse::kOverflow;
  *out = length;
  return NumberParse::kValid;
}

// chunk-size [ chunk-ext ] (the line without its end): the size is hex (any
// number of leading zeros), extensions are checked for legal bytes and
// ignored. kOverflow for a size of 2^64 or more on a line that is otherwise
// well formed.
[[nodiscard]] inline NumberParse parseChunkSize(std::string_view line, size_t* out) {
  size_t i = 0;
  size_t size = 0;
  bool overflow = false;
  while (i < line.size() && hasClass(line[i], kHexDigit)) {
    if (size > (SIZE_MAX >> 4)) {
      overflow = true;
    } else {
      size = (size << 4) | hexValue(line[i]);
    }
    ++i;
  }
  if (i == 0) return NumberParse::kInvalid;
  std::string_view ext = line.substr(i);
  while (!ext.empty() && isOws(ext.front())) ext.remove_prefix(1);
  if (!ext.empty() && (ext.front() != ';' || !allOf(ext, kFieldChar))) {
    return NumberParse::kInvalid;
  }
  if (overflow) return NumberParse::kOverflow;
  *out = size;
  return NumberParse::kValid;
}

}  // namespace libnet::http::detail
