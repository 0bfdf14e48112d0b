// HTTP dates: formatHttpDate() writes the IMF-fixdate form that HTTP/1.1
// senders must use (RFC 9110 5.6.7), "Sun, 06 Nov 1994 08:49:37 GMT", always
// in GMT and independent of the locale and TZ. HttpDateCache keeps the text
// for the current second so a server answering many requests a second formats
// the Date header once per second, not once per response.
// formatHttpDate() is thread-safe; an HttpDateCache belongs to one thread
// (one per loop).
#pragma once

#include <ctime>
#include <string>
#include <string_view>

namespace libnet::http {

// Length of an IMF-fixdate; every date formatted here has exactly this many bytes.
inline constexpr size_t kHttpDateLength = 29;

// Writes exactly kHttpDateLength bytes (no terminating NUL) to out.
void formatHttpDate(std::time_t t, char* out);
[[nodiscard]] std::string formatHttpDate(std::time_t t);

class HttpDateCache {
 public:
  HttpDateCache() = default;
  HttpDateCache(const HttpDateCache&) = delete;
  HttpDateCache& operator=(const HttpDateCache&) = delete;

  // The date for second `now`, reformatted only when it differs from the last
  // call's. The view stays valid until the next call.
  [[nodiscard]] std::string_view get(std::time_t now);
  // get() for the current wall-clock second.
  [[nodiscard]] std::string_view now() { return get(std::time(nullptr)); }

  // How many times the text was formatted (for tests and statistics).
  [[nodiscard]] size_t formatCount() const { return formatCount_; }

 private:
  std::time_t cached_ = 0;
  bool valid_ = false;
  size_t formatCount_ = 0;
  char text_[kHttpDateLength] = {};
};

}  // namespace libnet::http
