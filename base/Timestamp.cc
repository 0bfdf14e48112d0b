#include "base/Timestamp.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>

namespace libnet {

std::string Timestamp::toString() const {
  char buf[32];
  const int64_t us = sinceEpoch_.count();
  std::snprintf(buf, sizeof buf, "%" PRId64 ".%06" PRId64, us / 1000000, us % 1000000);
  return buf;
}

std::string Timestamp::toFormattedString(bool showMicros) const {
  const int64_t us = sinceEpoch_.count();
  const time_t seconds = static_cast<time_t>(us / 1000000);
  struct tm tm;
  ::gmtime_r(&seconds, &tm);
  char buf[64];
  if (showMicros) {
    std::snprintf(buf, sizeof buf, "%4d%02d%02d %02d:%02d:%02d.%06d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(us % 1000000));
  } else {
    std::snprintf(buf, sizeof buf, "%4d%02d%02d %02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  return buf;
}

}  // namespace libnet
