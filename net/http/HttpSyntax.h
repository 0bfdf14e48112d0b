// Line and number syntax shared by the request parser (HttpParser) and the
// response parser (HttpResponseParser): line ends, decimal lengths, chunk-size
// lines. Private to //net/http (target :syntax, visible to this package only).
// Pure functions: any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/http/HttpChars.h"

namespace libnet::http::detail {

// A chunk-size line is a hex number plus extensions that are ignored. No
// real peer comes near this bound, but without one a peer could make the
// parser hold an endless line.
inline constexpr size_t kMaxChunkSizeLine = 4096;

// The line from p to the '\n' at lf, without the line end (CRLF or bare LF).
[[nodiscard]] inline std::string_view lineBefore(const char* p, const char* lf) {
  const char* e = lf;
  if (e > p && e[-1] == '\r') --e;
  return {p, static_cast<size_t>(e - p)};
}

[[nodiscard]] inline bool isDigit(char c) { return c >= '0' && c <= '9'; }

[[nodiscard]] inline unsigned hexValue(char c) {
  if (isDigit(c)) return static_cast<unsigned>(c - '0');
  return static_cast<unsigned>(toLowerAscii(c) - 'a' + 10);
}

// Decimal digits only (no sign, no spaces inside); saturates at SIZE_MAX,
// which every body limit rejects.
[[nodiscard]] inline bool parseDecimal(std::string_view s, size_t* out) {
  if (s.empty()) return false;
  size_t v = 0;
  for (char c : s) {
    if (!isDigit(c)) return false;
    const auto d = static_cast<size_t>(c - '0');
    v = v > (SIZE_MAX - d) / 10 ? SIZE_MAX : v * 10 + d;
  }
  *out = v;
  return true;
}

// A Content-Length value: one length, or a list of identical ones ("42, 42",
// from a proxy joining duplicates, RFC 9112 6.3). False for anything else.
[[nodiscard]] inline bool parseContentLength(std::string_view value, size_t* out) {
  bool valid = true;
  bool any = false;
  size_t length = 0;
  forEachListElement(value, [&](std::string_view element) {
    size_t v = 0;
    if (!parseDecimal(element, &v) || (any && v != length)) valid = false;
    length = v;
    any = true;
  });
  if (!valid || !any) return false;
  *out = length;
  return true;
}

// chunk-size [ chunk-ext ] (the line without its end): the size is hex,
// extensions are checked for legal bytes and ignored. False when malformed;
// a size that overflows comes back as SIZE_MAX, which every limit rejects.
[[nodiscard]] inline bool parseChunkSize(std::string_view line, size_t* out) {
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
  if (i == 0) return false;
  std::string_view ext = line.substr(i);
  while (!ext.empty() && isOws(ext.front())) ext.remove_prefix(1);
  if (!ext.empty() && (ext.front() != ';' || !allOf(ext, kFieldChar))) return false;
  *out = overflow ? SIZE_MAX : size;
  return true;
}

}  // namespace libnet::http::detail
