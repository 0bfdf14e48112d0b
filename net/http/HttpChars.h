// Byte classes and case-insensitive comparisons shared by the HTTP parser,
// HttpRequest and HttpServer. Private to //net/http (listed in srcs, so only
// the library's own sources can include it). Pure functions: any thread.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace libnet::http::detail {

// One table lookup per byte instead of a chain of comparisons: the header
// name and value loops are the parser's hottest code.
enum CharClass : uint8_t {
  kTokenChar = 1,   // tchar (RFC 9110 5.6.2)
  kFieldChar = 2,   // allowed in a field value: VCHAR, SP, HTAB, obs-text
  kTargetChar = 4,  // allowed in a request-target: VCHAR only (no SP, CTL, DEL, 0x80-0xFF)
  kHexDigit = 8,
};

constexpr std::array<uint8_t, 256> makeCharTable() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    uint8_t bits = 0;
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    const bool digit = c >= '0' && c <= '9';
    if (alpha || digit) bits |= kTokenChar;
    for (char s : std::string_view("!#$%&'*+-.^_`|~")) {
      if (c == static_cast<unsigned char>(s)) bits |= kTokenChar;
    }
    // obs-text (0x80-0xFF) is allowed in field values (RFC 9110 5.5), where
    // clients do send raw UTF-8. A request-target is ASCII (RFC 9112 3.2,
    // RFC 3986 2.1): anything else must be percent-encoded. Letting raw bytes
    // through would give the target two spellings, raw and encoded, that the
    // server and a proxy or cache in front of it may not agree are one path.
    if (c > 0x20 && c < 0x7f) bits |= kFieldChar | kTargetChar;
    if (c >= 0x80) bits |= kFieldChar;
    if (c == ' ' || c == '\t') bits |= kFieldChar;
    if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) bits |= kHexDigit;
    t[static_cast<size_t>(c)] = bits;
  }
  return t;
}

inline constexpr std::array<uint8_t, 256> kCharTable = makeCharTable();

[[nodiscard]] inline bool hasClass(char c, CharClass cls) {
  return (kCharTable[static_cast<unsigned char>(c)] & cls) != 0;
}

[[nodiscard]] inline bool allOf(std::string_view s, CharClass cls) {
  for (char c : s) {
    if (!hasClass(c, cls)) return false;
  }
  return true;
}

// Whether every byte of s may appear in a field value. Eight bytes are tested
// at once for the bytes that can be wrong (below 0x20, and DEL); a word that
// has one (a tab, usually) is re-checked byte by byte. Values are most of a
// request's bytes, and this is what keeps them near memchr speed.
[[nodiscard]] inline bool isFieldValue(std::string_view s) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighBits = 0x8080808080808080ULL;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t x;
    std::memcpy(&x, s.data() + i, 8);
    // Nonzero iff some byte is below 0x20 (bytes >= 0x80 are masked by ~x)...
    const uint64_t control = (x - kOnes * 0x20) & ~x & kHighBits;
    // ...or some byte equals 0x7f (a zero byte after the xor).
    const uint64_t d = x ^ (kOnes * 0x7f);
    const uint64_t del = (d - kOnes) & ~d & kHighBits;
    if ((control | del) != 0) break;
  }
  for (; i < s.size(); ++i) {
    if (!hasClass(s[i], kFieldChar)) return false;
  }
  return true;
}

[[nodiscard]] inline char toLowerAscii(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c;
}

// `lower` must already be lower case (callers pass literals), which halves
// the work per byte.
[[nodiscard]] inline bool equalsLower(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (toLowerAscii(s[i]) != lower[i]) return false;
  }
  return true;
}

[[nodiscard]] inline bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (toLowerAscii(a[i]) != toLowerAscii(b[i])) return false;
  }
  return true;
}

[[nodiscard]] inline bool isOws(char c) { return c == ' ' || c == '\t'; }

[[nodiscard]] inline std::string_view trimOws(std::string_view s) {
  while (!s.empty() && isOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && isOws(s.back())) s.remove_suffix(1);
  return s;
}

// Calls f(element) for each element of a comma-separated list (RFC 9110 5.6.1),
// elements trimmed, empty elements skipped as the RFC asks of recipients.
template <typename F>
void forEachListElement(std::string_view list, F&& f) {
  while (true) {
    const size_t comma = list.find(',');
    const std::string_view element = trimOws(list.substr(0, comma));
    if (!element.empty()) f(element);
    if (comma == std::string_view::npos) return;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace libnet::http::detail
