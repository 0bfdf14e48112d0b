#include <gtest/gtest.h>

#include <chrono>

#include "base/Timestamp.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;

TEST(TimestampTest, DefaultIsInvalidEpoch) {
  const Timestamp t;
  EXPECT_FALSE(t.valid());
  EXPECT_EQ(t.microsSinceEpoch(), 0);
  EXPECT_EQ(t.toString(), "0.000000");
}

TEST(TimestampTest, NowIsValidAndDoesNotGoBackwardsMuch) {
  const Timestamp a = Timestamp::now();
  const Timestamp b = Timestamp::now();
  EXPECT_TRUE(a.valid());
  EXPECT_TRUE(b.valid());
  // Wall time may be stepped by NTP, but not by a second between two reads.
  EXPECT_GT(b - a, -1s);
  // Some time after 2023-11-14: the clock is sane.
  EXPECT_GT(a.secondsSinceEpoch(), 1700000000);
}

TEST(TimestampTest, FromUnixSeconds) {
  const Timestamp t = Timestamp::fromUnixSeconds(1700000000);
  EXPECT_TRUE(t.valid());
  EXPECT_EQ(t.secondsSinceEpoch(), 1700000000);
  EXPECT_EQ(t.microsSinceEpoch(), 1700000000LL * 1000000);
  EXPECT_EQ(t.sinceEpoch(), std::chrono::seconds(1700000000));
}

TEST(TimestampTest, Arithmetic) {
  const Timestamp base = Timestamp::fromUnixSeconds(1700000000);
  const Timestamp later = base + 1500ms;
  EXPECT_EQ(later - base, Timestamp::Micros(1500000));
  EXPECT_EQ(base - later, Timestamp::Micros(-1500000));
  EXPECT_EQ((base + 123us).microsSinceEpoch() - base.microsSinceEpoch(), 123);
  // Resolution is a microsecond: sub-microsecond parts are dropped.
  EXPECT_EQ(base + 999ns, base);
  EXPECT_EQ((base + 1999ns) - base, 1us);
  EXPECT_EQ(base + (-2s), Timestamp::fromUnixSeconds(1699999998));
  EXPECT_LT(base, later);
  EXPECT_GT(later, base);
  EXPECT_EQ(base + 0s, base);
}

TEST(TimestampTest, ToStringOfFixedInstant) {
  const Timestamp t = Timestamp::fromUnixSeconds(1700000000) + 123us;
  EXPECT_EQ(t.toString(), "1700000000.000123");
  EXPECT_EQ(t.toFormattedString(), "20231114 22:13:20.000123");
  EXPECT_EQ(t.toFormattedString(true), "20231114 22:13:20.000123");
  EXPECT_EQ(t.toFormattedString(false), "20231114 22:13:20");
}

TEST(TimestampTest, ToFormattedStringFullMicros) {
  const Timestamp t = Timestamp::fromUnixSeconds(1700000000) + 999999us;
  EXPECT_EQ(t.toString(), "1700000000.999999");
  EXPECT_EQ(t.toFormattedString(), "20231114 22:13:20.999999");
  // Carrying into the next second (and day) is handled by the calendar code.
  const Timestamp midnight = Timestamp::fromUnixSeconds(1700006399) + 1s;
  EXPECT_EQ(midnight.toFormattedString(), "20231115 00:00:00.000000");
}

}  // namespace
}  // namespace libnet
