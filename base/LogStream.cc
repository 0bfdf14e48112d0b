#include "base/LogStream.h"

#include <cinttypes>
#include <cstdio>

namespace libnet {

void LogStream::append(std::string_view s) {
  const size_t limit = kCapacity - kReserve;
  if (truncated_) return;
  if (len_ + s.size() > limit) {
    const size_t room = limit - len_;
    std::memcpy(buf_.data() + len_, s.data(), room);
    len_ += room;
    std::memcpy(buf_.data() + len_, "...", 3);
    len_ += 3;
    truncated_ = true;
    return;
  }
  std::memcpy(buf_.data() + len_, s.data(), s.size());
  len_ += s.size();
}

void LogStream::appendSuffix(std::string_view s) {
  const size_t n = std::min(s.size(), kCapacity - len_);
  std::memcpy(buf_.data() + len_, s.data(), n);
  len_ += n;
}

LogStream& LogStream::operator<<(double v) {
  char tmp[32];
  auto [end, ec] = std::to_chars(tmp, tmp + sizeof tmp, v, std::chars_format::general, 12);
  if (ec != std::errc()) return *this << "nan?";
  append(std::string_view(tmp, static_cast<size_t>(end - tmp)));
  return *this;
}

LogStream& LogStream::operator<<(const void* p) {
  char tmp[24];
  const int n = std::snprintf(tmp, sizeof tmp, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(p));
  append(std::string_view(tmp, static_cast<size_t>(n)));
  return *this;
}

}  // namespace libnet
