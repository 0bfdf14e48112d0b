// net/grpc/Wire: grpc-timeout, grpc-message's percent encoding, base64 of
// "-bin" values, the custom metadata checks and message framing.
#include "net/grpc/Wire.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>

namespace libnet::grpc {
namespace {

using namespace std::chrono_literals;

TEST(WireTest, ParseTimeoutTakesEveryUnit) {
  EXPECT_EQ(parseTimeout("1H"), Duration(1h));
  EXPECT_EQ(parseTimeout("2M"), Duration(2min));
  EXPECT_EQ(parseTimeout("3S"), Duration(3s));
  EXPECT_EQ(parseTimeout("4m"), Duration(4ms));
  EXPECT_EQ(parseTimeout("5u"), Duration(5us));
  EXPECT_EQ(parseTimeout("6n"), Duration(6ns));
  EXPECT_EQ(parseTimeout("0n"), Duration(0));
  EXPECT_EQ(parseTimeout("00000001S"), Duration(1s));
}

TEST(WireTest, ParseTimeoutTakesEightDigitsNotNine) {
  EXPECT_EQ(parseTimeout("99999999S"), Duration(99'999'999s));
  EXPECT_EQ(parseTimeout("12345678m"), Duration(12'345'678ms));
  EXPECT_EQ(parseTimeout("123456789S"), std::nullopt);
  EXPECT_EQ(parseTimeout("000000001S"), std::nullopt);
}

TEST(WireTest, ParseTimeoutRefusesMalformedValues) {
  for (const char* bad : {"", "S", "1", "10", "1s", "1h", "1x", "1 S", " 1S", "1S ", "+1S", "-1S",
                          "1.5S", "0x1S", "1SS", "S1", "１S"}) {
    EXPECT_EQ(parseTimeout(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(WireTest, ParseTimeoutSaturatesWhatADurationCannotHold) {
  // 99999999M is 5.99e18 ns: it fits. 99999999H (3.6e20 ns) does not.
  EXPECT_EQ(parseTimeout("99999999M"), Duration(99'999'999min));
  EXPECT_EQ(parseTimeout("99999999H"), Duration::max());
  EXPECT_EQ(parseTimeout("2562048H"), Duration::max());
  EXPECT_EQ(parseTimeout("2562047H"), Duration(2'562'047h));
}

TEST(WireTest, FormatTimeoutPicksTheShortestExactForm) {
  EXPECT_EQ(formatTimeout(1ns), "1n");
  EXPECT_EQ(formatTimeout(1500ms), "1500m");
  EXPECT_EQ(formatTimeout(2s), "2S");
  EXPECT_EQ(formatTimeout(90s), "90S");
  EXPECT_EQ(formatTimeout(1min), "1M");
  EXPECT_EQ(formatTimeout(3h), "3H");
  EXPECT_EQ(formatTimeout(100ms), "100m");
  EXPECT_EQ(formatTimeout(99'999'999ns), "99999999n");
  EXPECT_EQ(formatTimeout(100'000'000ns), "100m");
}

TEST(WireTest, FormatTimeoutRoundsUpWhenNoExactFormFits) {
  // 9 digits of nanoseconds: microseconds, rounded up.
  EXPECT_EQ(formatTimeout(123'456'789ns), "123457u");
  EXPECT_EQ(formatTimeout(123'456'001ns), "123457u");
  EXPECT_EQ(formatTimeout(Duration(10'000'000'001)), "10000001u");
  EXPECT_EQ(formatTimeout(Duration(100'000'000'001)), "100001m");
  EXPECT_EQ(formatTimeout(Duration::max()), "2562048H");
}

TEST(WireTest, FormatTimeoutOfNothingIsZero) {
  EXPECT_EQ(formatTimeout(Duration(0)), "0n");
  EXPECT_EQ(formatTimeout(-5s), "0n");
  EXPECT_EQ(formatTimeout(Duration::min()), "0n");
}

TEST(WireTest, FormattedTimeoutsParseBackNeverShorter) {
  std::mt19937_64 random(45);
  for (int i = 0; i < 20000; ++i) {
    // Spread over every magnitude, from 1 ns to ~292 years.
    const int bits = 1 + static_cast<int>(random() % 63);
    const Duration timeout(static_cast<int64_t>(random() >> (64 - bits)) + 1);
    const std::string text = formatTimeout(timeout);
    ASSERT_LE(text.size(), 9u) << text;
    const std::optional<Duration> back = parseTimeout(text);
    ASSERT_TRUE(back.has_value()) << text;
    ASSERT_GE(*back, timeout) << text;
    // Less than one of the unit chosen more.
    const std::optional<Duration> unit = parseTimeout(std::string("1") + text.back());
    ASSERT_LT(*back - timeout, *unit) << text;
  }
}

TEST(WireTest, PercentEncodeKeepsPrintableAsciiButPercent) {
  EXPECT_EQ(percentEncode(""), "");
  EXPECT_EQ(percentEncode("Hello, world ~!"), "Hello, world ~!");
  EXPECT_EQ(percentEncode("100%"), "100%25");
  EXPECT_EQ(percentEncode("a\nb\tc"), "a%0Ab%09c");
  EXPECT_EQ(percentEncode(std::string("\0\x1f\x7f\xff", 4)), "%00%1F%7F%FF");
  // UTF-8, byte by byte (gRPC's special_status_message case).
  EXPECT_EQ(percentEncode("caf\xc3\xa9"), "caf%C3%A9");
  EXPECT_EQ(percentEncode("\t\ntest with whitespace\r\nand Unicode BMP \xe2\x98\xba and SMP "
                          "\xf0\x9f\x98\x88\t\n"),
            "%09%0Atest with whitespace%0D%0Aand Unicode BMP %E2%98%BA and SMP %F0%9F%98%88%09%0A");
}

TEST(WireTest, PercentRoundTripsEveryByte) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string encoded = percentEncode(all);
  for (const char c : encoded) {
    ASSERT_TRUE(c >= 0x20 && c <= 0x7e);
  }
  EXPECT_EQ(percentDecode(encoded), all);
  EXPECT_EQ(percentDecode("%%41%25"), "%A%");
}

TEST(WireTest, PercentDecodeTakesLowerCaseHex) {
  EXPECT_EQ(percentDecode("caf%c3%a9"), "caf\xc3\xa9");
  EXPECT_EQ(percentDecode("%4a%4A"), "JJ");
}

TEST(WireTest, PercentDecodeLeavesBadEscapesAsTheyAre) {
  for (const char* kept : {"%", "%4", "100%", "%zz", "%4g", "%g4", "a%", "%%", "% 41"}) {
    EXPECT_EQ(percentDecode(kept), kept) << kept;
  }
  EXPECT_EQ(percentDecode("%4%41"), "%4A");
  EXPECT_EQ(percentDecode("%zz%41"), "%zzA");
}

TEST(WireTest, Base64EncodesTheRfcVectorsWithPadding) {
  EXPECT_EQ(base64Encode(""), "");
  EXPECT_EQ(base64Encode("f"), "Zg==");
  EXPECT_EQ(base64Encode("fo"), "Zm8=");
  EXPECT_EQ(base64Encode("foo"), "Zm9v");
  EXPECT_EQ(base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64Encode("\xff\xfe\xfd"), "//79");
  EXPECT_EQ(base64Encode(std::string("\0\0", 2)), "AAA=");
}

TEST(WireTest, Base64DecodesWithAndWithoutPadding) {
  const char* plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
  const char* padded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
  const char* unpadded[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
  for (size_t i = 0; i < std::size(plain); ++i) {
    EXPECT_EQ(base64Decode(padded[i]), plain[i]) << padded[i];
    EXPECT_EQ(base64Decode(unpadded[i]), plain[i]) << unpadded[i];
  }
}

TEST(WireTest, Base64RefusesWhatIsNotBase64) {
  for (const char* bad : {"Z", "Zm9vY", "Zg=", "Zg===", "Zm8==", "=", "==", "====", "Zg==Zg==",
                          "Zm=9", "Zm9v!", "Zm9v Zm9v", "Zm9v\n", "-_-_", "Zh==", "Zh", "Zm9=",
                          "Zm9"
                          "\xc3\xa9"}) {
    EXPECT_EQ(base64Decode(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(WireTest, Base64RoundTripsAnyBytes) {
  std::mt19937 random(7);
  for (size_t length = 0; length < 300; ++length) {
    std::string bytes(length, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    const std::string encoded = base64Encode(bytes);
    ASSERT_EQ(encoded.size() % 4, 0u);
    ASSERT_EQ(base64Decode(encoded), bytes);
    const std::string unpadded = encoded.substr(0, encoded.find('='));
    ASSERT_EQ(base64Decode(unpadded), bytes);
  }
}

TEST(WireTest, MetadataKeysAreLowerCaseDigitsAndThreeMarks) {
  EXPECT_TRUE(validMetadataKey("x-custom"));
  EXPECT_TRUE(validMetadataKey("a.b_c-d0"));
  EXPECT_TRUE(validMetadataKey("trace-bin"));
  // Reserved names are the caller's business.
  EXPECT_TRUE(validMetadataKey("grpc-status"));
  for (const char* bad : {"", "X-Custom", "key:", ":path", "a b", "a/b", "a\tb", "caf\xc3\xa9"}) {
    EXPECT_FALSE(validMetadataKey(bad)) << "'" << bad << "'";
  }
  EXPECT_FALSE(validMetadataKey(std::string("a\0b", 3)));
}

TEST(WireTest, MetadataValuesArePrintableUnlessBinary) {
  EXPECT_TRUE(validMetadataValue("x", ""));
  EXPECT_TRUE(validMetadataValue("x", "value with spaces ~!@#"));
  for (const char* bad : {"a\tb", "a\nb", "\x7f", "caf\xc3\xa9"}) {
    EXPECT_FALSE(validMetadataValue("x", bad)) << "'" << bad << "'";
  }
  EXPECT_FALSE(validMetadataValue("x", std::string("\0", 1)));
  EXPECT_TRUE(validMetadataValue("x-bin", std::string("\0\xff\n", 3)));
  EXPECT_TRUE(isBinaryKey("x-bin"));
  EXPECT_FALSE(isBinaryKey("x-bin-not"));
  EXPECT_FALSE(isBinaryKey("bin"));
}

TEST(WireTest, AppendFramePrefixesFlagAndBigEndianLength) {
  std::string out = "before";
  appendFrame(&out, "abc", false);
  EXPECT_EQ(out, std::string("before\0\0\0\0\3abc", 14));
  out.clear();
  appendFrame(&out, "", true);
  EXPECT_EQ(out, std::string("\1\0\0\0\0", 5));
  out.clear();
  const std::string big(0x011170, 'x');
  appendFrame(&out, big, true);
  ASSERT_EQ(out.size(), kFramePrefixBytes + big.size());
  EXPECT_EQ(out.substr(0, 5), std::string("\1\0\1\x11\x70", 5));
  EXPECT_EQ(out.substr(5), big);
}

}  // namespace
}  // namespace libnet::grpc
