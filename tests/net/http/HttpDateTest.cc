#include <gtest/gtest.h>
#include <stdlib.h>

#include <ctime>
#include <string>

#include "net/http/HttpDate.h"

namespace libnet::http {
namespace {

TEST(HttpDateTest, KnownInstants) {
  // The example in RFC 9110 5.6.7.
  EXPECT_EQ(formatHttpDate(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(formatHttpDate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(formatHttpDate(946684799), "Fri, 31 Dec 1999 23:59:59 GMT");
  EXPECT_EQ(formatHttpDate(951868799), "Tue, 29 Feb 2000 23:59:59 GMT");
  EXPECT_EQ(formatHttpDate(2147483648), "Tue, 19 Jan 2038 03:14:08 GMT");
}

TEST(HttpDateTest, OutOfRangeYearsFallBackToTheEpoch) {
  // 253402300800 is 10000-01-01T00:00:00Z, the first second with five digits.
  EXPECT_EQ(formatHttpDate(253402300799), "Fri, 31 Dec 9999 23:59:59 GMT");
  EXPECT_EQ(formatHttpDate(253402300800), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(formatHttpDate(-62167219201), "Thu, 01 Jan 1970 00:00:00 GMT");  // year -1
}

TEST(HttpDateTest, FixedLengthWithoutTerminator) {
  char out[kHttpDateLength + 1];
  out[kHttpDateLength] = '#';
  formatHttpDate(784111777, out);
  EXPECT_EQ(std::string(out, kHttpDateLength), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(out[kHttpDateLength], '#');
  EXPECT_EQ(formatHttpDate(1700000000).size(), kHttpDateLength);
}

TEST(HttpDateTest, IgnoresTheLocalTimeZone) {
  const char* old = getenv("TZ");
  const std::string saved = old ? old : "";
  setenv("TZ", "America/New_York", 1);
  tzset();
  const std::string text = formatHttpDate(784111777);
  if (old) {
    setenv("TZ", saved.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
  EXPECT_EQ(text, "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(HttpDateTest, CacheFormatsOncePerSecond) {
  HttpDateCache cache;
  EXPECT_EQ(cache.formatCount(), 0u);
  EXPECT_EQ(cache.get(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(cache.get(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(cache.formatCount(), 1u);
  EXPECT_EQ(cache.get(784111778), "Sun, 06 Nov 1994 08:49:38 GMT");
  EXPECT_EQ(cache.formatCount(), 2u);
  // Going back (a wall-clock step) reformats too.
  EXPECT_EQ(cache.get(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(cache.formatCount(), 3u);
  // The first call formats even for time 0, the cache's initial value.
  HttpDateCache epoch;
  EXPECT_EQ(epoch.get(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(epoch.formatCount(), 1u);
}

TEST(HttpDateTest, CacheNowIsTheCurrentSecond) {
  HttpDateCache cache;
  const std::time_t before = std::time(nullptr);
  const std::string text(cache.now());
  const std::time_t after = std::time(nullptr);
  EXPECT_TRUE(text == formatHttpDate(before) || text == formatHttpDate(after)) << text;
}

}  // namespace
}  // namespace libnet::http
