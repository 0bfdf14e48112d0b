// LogStream: an ostream-like formatter into a fixed, inline buffer. One log line
// is built in it with no heap allocation; what does not fit is cut off (the line
// then ends in "..."). Owned by one Logger, used by one thread.
#pragma once

#include <array>
#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace libnet {

class LogStream {
 public:
  static constexpr size_t kCapacity = 4000;
  // Kept free at the end so the suffix (" - File.cc:123\n") always fits.
  static constexpr size_t kReserve = 96;

  LogStream() = default;
  LogStream(const LogStream&) = delete;
  LogStream& operator=(const LogStream&) = delete;

  LogStream& operator<<(std::string_view s) {
    append(s);
    return *this;
  }
  LogStream& operator<<(const char* s) { return *this << std::string_view(s ? s : "(null)"); }
  LogStream& operator<<(const std::string& s) { return *this << std::string_view(s); }
  LogStream& operator<<(char c) {
    append(std::string_view(&c, 1));
    return *this;
  }
  LogStream& operator<<(bool b) { return *this << (b ? "true" : "false"); }

  template <std::integral T>
  requires(!std::same_as<T, char> && !std::same_as<T, bool>) LogStream& operator<<(T v) {
    char tmp[24];
    auto [end, ec] = std::to_chars(tmp, tmp + sizeof tmp, v);
    (void)ec;
    append(std::string_view(tmp, static_cast<size_t>(end - tmp)));
    return *this;
  }

  LogStream& operator<<(double v);
  LogStream& operator<<(float v) { return *this << static_cast<double>(v); }
  LogStream& operator<<(const void* p);

  // Appends even into the reserved tail; used for the line's suffix.
  void appendSuffix(std::string_view s);

  [[nodiscard]] std::string_view view() const { return {buf_.data(), len_}; }
  [[nodiscard]] size_t size() const { return len_; }
  void reset() { len_ = 0; }

 private:
  void append(std::string_view s);

  std::array<char, kCapacity> buf_;
  size_t len_ = 0;
  bool truncated_ = false;
};

}  // namespace libnet
