#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

#include "base/LogStream.h"

namespace libnet {
namespace {

template <class T>
std::string format(const T& value) {
  LogStream s;
  s << value;
  return std::string(s.view());
}

TEST(LogStreamTest, StartsEmpty) {
  LogStream s;
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.view(), "");
}

TEST(LogStreamTest, SignedIntegers) {
  EXPECT_EQ(format(0), "0");
  EXPECT_EQ(format(-1), "-1");
  EXPECT_EQ(format(static_cast<short>(-32768)), "-32768");
  EXPECT_EQ(format(std::numeric_limits<int>::max()), "2147483647");
  EXPECT_EQ(format(std::numeric_limits<int>::min()), "-2147483648");
  EXPECT_EQ(format(std::numeric_limits<int64_t>::max()), "9223372036854775807");
  EXPECT_EQ(format(INT64_MIN), "-9223372036854775808");
  EXPECT_EQ(format(static_cast<signed char>(-5)), "-5");
}

TEST(LogStreamTest, UnsignedIntegers) {
  EXPECT_EQ(format(0u), "0");
  EXPECT_EQ(format(std::numeric_limits<unsigned>::max()), "4294967295");
  EXPECT_EQ(format(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(format(std::numeric_limits<unsigned long long>::max()), "18446744073709551615");
  EXPECT_EQ(format(static_cast<uint16_t>(65535)), "65535");
  // uint8_t is a number, not a character.
  EXPECT_EQ(format(static_cast<uint8_t>(255)), "255");
  EXPECT_EQ(format(size_t{42}), "42");
}

TEST(LogStreamTest, CharIsACharacter) {
  EXPECT_EQ(format('a'), "a");
  LogStream s;
  s << 'x' << '\0' << 'y';
  EXPECT_EQ(s.view(), std::string_view("x\0y", 3));
}

TEST(LogStreamTest, Bool) {
  EXPECT_EQ(format(true), "true");
  EXPECT_EQ(format(false), "false");
}

TEST(LogStreamTest, Doubles) {
  EXPECT_EQ(format(0.0), "0");
  EXPECT_EQ(format(1.0), "1");
  EXPECT_EQ(format(-2.5), "-2.5");
  EXPECT_EQ(format(0.1), "0.1");
  EXPECT_EQ(format(1.0 / 3), "0.333333333333");  // 12 significant digits
  EXPECT_EQ(format(1e300), "1e+300");
  EXPECT_EQ(format(1.5e-10), "1.5e-10");
  EXPECT_EQ(format(123456789012.0), "123456789012");
  EXPECT_EQ(format(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(format(std::nan("")), "nan");
  EXPECT_EQ(format(0.25f), "0.25");
}

TEST(LogStreamTest, Pointers) {
  EXPECT_EQ(format(static_cast<const void*>(nullptr)), "0x0");
  EXPECT_EQ(format(reinterpret_cast<const void*>(uintptr_t{0x1234abcd})), "0x1234abcd");
  int x = 0;
  int* p = &x;
  char expected[32];
  std::snprintf(expected, sizeof expected, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(p));
  EXPECT_EQ(format(p), expected);
}

TEST(LogStreamTest, Strings) {
  EXPECT_EQ(format("hello"), "hello");
  EXPECT_EQ(format(std::string("world")), "world");
  EXPECT_EQ(format(std::string_view("view")), "view");
  EXPECT_EQ(format(std::string_view("a\0b", 3)), std::string("a\0b", 3));
  const char* null = nullptr;
  EXPECT_EQ(format(null), "(null)");
  EXPECT_EQ(format(""), "");
}

TEST(LogStreamTest, Chaining) {
  LogStream s;
  s << "x=" << 42 << ", y=" << -1.5 << ", ok=" << true << ' ' << std::string("end");
  EXPECT_EQ(s.view(), "x=42, y=-1.5, ok=true end");
  EXPECT_EQ(s.size(), s.view().size());
}

TEST(LogStreamTest, ResetEmpties) {
  LogStream s;
  s << "abc";
  s.reset();
  EXPECT_EQ(s.size(), 0u);
  s << "d";
  EXPECT_EQ(s.view(), "d");
}

TEST(LogStreamTest, ExactlyAtLimitIsNotTruncated) {
  constexpr size_t kLimit = LogStream::kCapacity - LogStream::kReserve;
  LogStream s;
  const std::string fill(kLimit, 'a');
  s << fill;
  EXPECT_EQ(s.size(), kLimit);
  EXPECT_EQ(s.view(), fill);
  s << 'b';  // one byte too many: now it is cut off
  EXPECT_EQ(s.size(), kLimit + 3);
  EXPECT_EQ(s.view().substr(kLimit), "...");
}

TEST(LogStreamTest, OverlongTextIsTruncatedWithEllipsis) {
  constexpr size_t kLimit = LogStream::kCapacity - LogStream::kReserve;
  LogStream s;
  s << "head:";
  s << std::string(2 * LogStream::kCapacity, 'x');
  ASSERT_EQ(s.size(), kLimit + 3);
  EXPECT_EQ(s.view().substr(0, 5), "head:");
  EXPECT_EQ(s.view().substr(5, kLimit - 5), std::string(kLimit - 5, 'x'));
  EXPECT_EQ(s.view().substr(kLimit), "...");

  // Once truncated, further text is dropped (no second "...").
  s << "more" << 12345;
  EXPECT_EQ(s.size(), kLimit + 3);

  // The suffix still fits in the reserved tail.
  s.appendSuffix(" - File.cc:12\n");
  EXPECT_EQ(s.view().substr(kLimit), "... - File.cc:12\n");
  EXPECT_LE(s.size(), LogStream::kCapacity);
}

TEST(LogStreamTest, AppendSuffixNeverOverflowsCapacity) {
  LogStream s;
  s << std::string(LogStream::kCapacity, 'x');
  s.appendSuffix(std::string(LogStream::kCapacity, 's'));
  EXPECT_EQ(s.size(), LogStream::kCapacity);
  EXPECT_EQ(s.view().back(), 's');
}

}  // namespace
}  // namespace libnet
