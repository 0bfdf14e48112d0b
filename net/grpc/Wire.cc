#include "net/grpc/Wire.h"

#include <array>
#include <cassert>
#include <cstdint>
#include <limits>

namespace libnet::grpc {

namespace {

// grpc-timeout's value has at most 8 digits (PROTOCOL-HTTP2.md).
constexpr int64_t kMaxTimeoutValue = 99'999'999;

struct TimeoutUnit {
  char letter;
  int64_t nanoseconds;
};

// Coarsest first: formatTimeout() takes the first exact fit, which is the
// one with the fewest digits.
constexpr std::array<TimeoutUnit, 6> kTimeoutUnits = {{
    {'H', 3'600'000'000'000},
    {'M', 60'000'000'000},
    {'S', 1'000'000'000},
    {'m', 1'000'000},
    {'u', 1'000},
    {'n', 1},
}};

constexpr char kHexDigits[] = "0123456789ABCDEF";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool printable(unsigned char c) { return c >= 0x20 && c <= 0x7E; }

constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The 6-bit value of each byte in base64, or -1.
constexpr std::array<int8_t, 256> makeBase64Values() {
  std::array<int8_t, 256> values{};
  for (auto& v : values) v = -1;
  for (int i = 0; i < 64; ++i) values[static_cast<unsigned char>(kBase64Alphabet[i])] = int8_t(i);
  return values;
}
constexpr std::array<int8_t, 256> kBase64Values = makeBase64Values();

// `text` without its '=' padding, or nullopt when the padding is not a valid
// end of a padded value (a multiple of 4 in all, at most two '=').
std::optional<std::string_view> stripPadding(std::string_view text) {
  const size_t end = text.find_last_not_of('=');
  const size_t padding = end == std::string_view::npos ? text.size() : text.size() - end - 1;
  if (padding == 0) return text;
  if (padding > 2 || text.size() % 4 != 0) return std::nullopt;
  return text.substr(0, text.size() - padding);
}

}  // namespace

std::optional<Duration> parseTimeout(std::string_view value) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  const char letter = value.back();
  int64_t unitNanos = 0;
  for (const TimeoutUnit& unit : kTimeoutUnits) {
    if (unit.letter == letter) unitNanos = unit.nanoseconds;
  }
  if (unitNanos == 0) return std::nullopt;
  int64_t count = 0;
  for (const char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    count = count * 10 + (c - '0');
  }
  // 99999999H is about 11400 years, past what int64 nanoseconds hold
  // (about 292 years): such a deadline is as good as none.
  if (count > std::numeric_limits<int64_t>::max() / unitNanos) return Duration::max();
  return Duration(count * unitNanos);
}

std::string formatTimeout(Duration timeout) {
  const int64_t nanos = timeout.count();
  if (nanos <= 0) return "0n";
  for (const TimeoutUnit& unit : kTimeoutUnits) {
    if (nanos % unit.nanoseconds == 0 && nanos / unit.nanoseconds <= kMaxTimeoutValue) {
      return std::to_string(nanos / unit.nanoseconds) + unit.letter;
    }
  }
  // No exact form fits in 8 digits: the finest unit that does, rounded up
  // so that the peer's deadline is never earlier than ours. Hours always
  // fit (a Duration is under 2.6 million hours).
  for (auto unit = kTimeoutUnits.rbegin(); unit != kTimeoutUnits.rend(); ++unit) {
    const int64_t count = nanos / unit->nanoseconds + (nanos % unit->nanoseconds != 0 ? 1 : 0);
    if (count <= kMaxTimeoutValue) return std::to_string(count) + unit->letter;
  }
  assert(false && "a Duration always fits in 8 digits of hours");
  return "99999999H";
}

std::string percentEncode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (printable(byte) && c != '%') {
      out += c;
    } else {
      out += '%';
      out += kHexDigits[byte >> 4];
      out += kHexDigits[byte & 0xF];
    }
  }
  return out;
}

std::string percentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int high = hexValue(text[i + 1]);
      const int low = hexValue(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high << 4 | low);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

std::string base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t group = uint32_t(uint8_t(bytes[i])) << 16 |
                           uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
    out += kBase64Alphabet[group >> 18];
    out += kBase64Alphabet[(group >> 12) & 0x3F];
    out += kBase64Alphabet[(group >> 6) & 0x3F];
    out += kBase64Alphabet[group & 0x3F];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t group = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) group |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kBase64Alphabet[group >> 18];
    out += kBase64Alphabet[(group >> 12) & 0x3F];
    out += rest == 2 ? kBase64Alphabet[(group >> 6) & 0x3F] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64Decode(std::string_view text) {
  const std::optional<std::string_view> stripped = stripPadding(text);
  if (!stripped || stripped->size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(stripped->size() / 4 * 3 + 2);
  uint32_t bits = 0;
  int bitCount = 0;
  for (const char c : *stripped) {
    const int value = kBase64Values[static_cast<unsigned char>(c)];
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | uint32_t(value);
    bitCount += 6;
    if (bitCount >= 8) {
      bitCount -= 8;
      out += static_cast<char>((bits >> bitCount) & 0xFF);
    }
  }
  // The bits after the last byte must be zero: otherwise two texts would
  // decode to the same bytes, and no encoder writes them.
  if ((bits & ((1u << bitCount) - 1)) != 0) return std::nullopt;
  return out;
}

bool validMetadataKey(std::string_view key) {
  if (key.empty()) return false;
  for (const char c : key) {
    const bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool isBinaryKey(std::string_view key) { return key.ends_with("-bin"); }

bool validMetadataValue(std::string_view key, std::string_view value) {
  if (isBinaryKey(key)) return true;
  for (const char c : value) {
    if (!printable(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

void appendFrame(std::string* out, std::string_view payload, bool compressed) {
  // The sender's limit on messages is far below 4 GiB; a longer payload
  // cannot be framed at all.
  assert(payload.size() <= std::numeric_limits<uint32_t>::max());
  const auto length = static_cast<uint32_t>(payload.size());
  const char prefix[kFramePrefixBytes] = {
      static_cast<char>(compressed ? 1 : 0),
      static_cast<char>(length >> 24),
      static_cast<char>(length >> 16),
      static_cast<char>(length >> 8),
      static_cast<char>(length),
  };
  out->append(prefix, kFramePrefixBytes);
  out->append(payload);
}

}  // namespace libnet::grpc
