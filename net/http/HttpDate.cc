#include "net/http/HttpDate.h"

#include <cstring>

namespace libnet::http {

namespace {

constexpr char kDayNames[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr char kMonthNames[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void put2(char* out, int v) {
  out[0] = static_cast<char>('0' + v / 10 % 10);
  out[1] = static_cast<char>('0' + v % 10);
}

}  // namespace

void formatHttpDate(std::time_t t, char* out) {
  // gmtime_r, not strftime: strftime's %a and %b follow LC_TIME, and the
  // wire format wants the English names whatever the process locale is.
  struct tm tm;
  // IMF-fixdate has a four-digit year; outside 0..9999 (or outside what
  // gmtime_r handles) the epoch is a well-formed stand-in.
  if (gmtime_r(&t, &tm) == nullptr || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900) {
    const std::time_t epoch = 0;
    gmtime_r(&epoch, &tm);
  }
  const int year = tm.tm_year + 1900;
  std::memcpy(out, kDayNames[tm.tm_wday], 3);
  out[3] = ',';
  out[4] = ' ';
  put2(out + 5, tm.tm_mday);
  out[7] = ' ';
  std::memcpy(out + 8, kMonthNames[tm.tm_mon], 3);
  out[11] = ' ';
  put2(out + 12, year / 100);
  put2(out + 14, year % 100);
  out[16] = ' ';
  put2(out + 17, tm.tm_hour);
  out[19] = ':';
  put2(out + 20, tm.tm_min);
  out[22] = ':';
  put2(out + 23, tm.tm_sec);
  std::memcpy(out + 25, " GMT", 4);
}

std::string formatHttpDate(std::time_t t) {
  std::string s(kHttpDateLength, '\0');
  formatHttpDate(t, s.data());
  return s;
}

std::string_view HttpDateCache::get(std::time_t now) {
  if (!valid_ || now != cached_) {
    formatHttpDate(now, text_);
    cached_ = now;
    valid_ = true;
    ++formatCount_;
  }
  return {text_, kHttpDateLength};
}

}  // namespace libnet::http
