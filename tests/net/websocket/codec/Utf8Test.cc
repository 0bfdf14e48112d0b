#include "net/websocket/Utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace libnet::ws {
namespace {

// A straightforward decoder following RFC 3629's table, to check the DFA
// against.
bool referenceValid(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = 1, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // truncated
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000)) return false;  // overlong
    if (cp >= 0xd800 && cp <= 0xdfff) return false;
    if (cp > 0x10ffff) return false;
    i += n + 1;
  }
  return true;
}

TEST(Utf8Test, AgreesWithReferenceOnEveryTwoByteString) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const std::string s{char(a), char(b)};
      ASSERT_EQ(Utf8Validator::isValid(s), referenceValid(s)) << a << " " << b;
    }
  }
}

TEST(Utf8Test, AgreesWithReferenceOnLongerSequencesAtRangeBoundaries) {
  const std::vector<int> tails = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff};
  for (int lead = 0xc0; lead < 256; ++lead) {
    for (int b : tails) {
      for (int c : tails) {
        const std::string three{char(lead), char(b), char(c)};
        ASSERT_EQ(Utf8Validator::isValid(three), referenceValid(three)) << lead << " " << b;
        for (int d : tails) {
          const std::string four{char(lead), char(b), char(c), char(d)};
          ASSERT_EQ(Utf8Validator::isValid(four), referenceValid(four)) << lead << " " << b;
        }
      }
    }
  }
}

TEST(Utf8Test, CodePointSplitAtEveryByteIsValid) {
  const std::string text = "a\xc3\xa9z\xe2\x82\xac-\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xed\x9f\xbf";
  ASSERT_TRUE(Utf8Validator::isValid(text));
  for (size_t split = 0; split <= text.size(); ++split) {
    Utf8Validator v;
    EXPECT_TRUE(v.feed(std::string_view(text).substr(0, split))) << split;
    EXPECT_TRUE(v.feed(std::string_view(text).substr(split))) << split;
    EXPECT_TRUE(v.complete()) << split;
  }
  Utf8Validator bytewise;
  for (char c : text) ASSERT_TRUE(bytewise.feed(std::string_view(&c, 1)));
  EXPECT_TRUE(bytewise.complete());
}

TEST(Utf8Test, InvalidClasses) {
  const std::vector<std::string> invalid = {
      "\xc0\x80",             // overlong NUL
      "\xc1\xbf",             // overlong 2-byte
      "\xe0\x80\x80",         // overlong 3-byte
      "\xe0\x9f\xbf",         // overlong 3-byte, top
      "\xf0\x80\x80\x80",     // overlong 4-byte
      "\xf0\x8f\xbf\xbf",     // overlong 4-byte, top
      "\xed\xa0\x80",         // U+D800
      "\xed\xbf\xbf",         // U+DFFF
      "\xf4\x90\x80\x80",     // U+110000
      "\xf5\x80\x80\x80",     // lead past F4
      "\xff",                 // never valid
      "\x80",                 // stray continuation
      "\xc3\x28",             // lead without continuation
      "\xe2\x82\x28",         // broken 3-byte
      "abc\xce\xba\xe1\xbd",  // truncated at the end
  };
  for (const std::string& s : invalid) EXPECT_FALSE(Utf8Validator::isValid(s)) << s;
}

TEST(Utf8Test, InvalidIsReportedByTheFirstFeedThatProvesIt) {
  Utf8Validator v;
  EXPECT_TRUE(v.feed("hello \xe0"));  // could still be valid
  EXPECT_FALSE(v.complete());
  EXPECT_FALSE(v.feed("\x80"));  // E0 80 is overlong whatever follows
  EXPECT_TRUE(v.failed());
  EXPECT_FALSE(v.feed("ok"));  // stays failed
  v.reset();
  EXPECT_TRUE(v.feed("ok"));
  EXPECT_TRUE(v.complete());
}

TEST(Utf8Test, AsciiRunsWithAnInvalidByteAnywhere) {
  for (size_t length : {7u, 8u, 9u, 16u, 63u, 64u, 65u}) {
    const std::string ascii(length, 'x');
    EXPECT_TRUE(Utf8Validator::isValid(ascii));
    for (size_t at = 0; at < length; ++at) {
      std::string s = ascii;
      s[at] = '\xff';
      EXPECT_FALSE(Utf8Validator::isValid(s)) << length << " " << at;
      s[at] = '\x7f';
      EXPECT_TRUE(Utf8Validator::isValid(s)) << length << " " << at;
    }
  }
}

}  // namespace
}  // namespace libnet::ws
