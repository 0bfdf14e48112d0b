// LatencyHistogram: buckets, quantiles of synthetic samples, the window.
#include "net/LatencyHistogram.h"

#include <chrono>

#include "gtest/gtest.h"

namespace libnet {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(LatencyHistogramTest, EveryValueFallsInABucketThatHoldsIt) {
  int last = 0;
  for (uint64_t v = 0; v < 100000; v = v * 3 / 2 + 1) {
    const int b = LatencyHistogram::bucketOf(v);
    EXPECT_GE(b, last);
    EXPECT_GE(LatencyHistogram::upperBound(b), v);
    // Log-linear: a bucket is at most a quarter wider than its values.
    EXPECT_LE(LatencyHistogram::upperBound(b), v + v / 4 + 1) << v;
    if (b > 0) {
      EXPECT_LT(LatencyHistogram::upperBound(b - 1), v);
    }
    last = b;
  }
  EXPECT_EQ(LatencyHistogram::bucketOf(UINT64_MAX), LatencyHistogram::kBuckets - 1);
}

TEST(LatencyHistogramTest, QuantilesOfSyntheticSamples) {
  LatencyHistogram h;
  const Duration now = seconds(100);
  // 1..1000 us: p50 about 500 us, p99 about 990 us.
  for (int i = 1; i <= 1000; ++i) h.record(microseconds(i), now);
  const LatencyHistogram::Summary s = h.summary(now);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.max, microseconds(1000));
  EXPECT_GE(s.p50, microseconds(500));
  EXPECT_LE(s.p50, microseconds(625));
  EXPECT_GE(s.p99, microseconds(990));
  EXPECT_LE(s.p99, microseconds(1000));  // never above the maximum
}

TEST(LatencyHistogramTest, OneSlowSampleIsTheMaxAndNotTheMedian) {
  LatencyHistogram h;
  const Duration now = seconds(1);
  for (int i = 0; i < 99; ++i) h.record(microseconds(10), now);
  h.record(milliseconds(50), now);
  const LatencyHistogram::Summary s = h.summary(now);
  EXPECT_LE(s.p50, microseconds(12));
  EXPECT_LE(s.p99, microseconds(12));
  EXPECT_EQ(s.max, milliseconds(50));
}

TEST(LatencyHistogramTest, OldSamplesLeaveTheWindow) {
  LatencyHistogram h(seconds(10));
  h.record(milliseconds(7), seconds(100));
  // Next half: both halves count.
  h.record(microseconds(3), seconds(106));
  EXPECT_EQ(h.summary(seconds(106)).count, 2u);
  EXPECT_EQ(h.summary(seconds(106)).max, milliseconds(7));
  // Another half on: the first sample's half was cleared for the new one.
  h.record(microseconds(3), seconds(111));
  const LatencyHistogram::Summary s = h.summary(seconds(111));
  EXPECT_EQ(s.count, 2u);
  EXPECT_EQ(s.max, microseconds(3));
  // Nothing recorded for a whole window: nothing to report.
  EXPECT_EQ(h.summary(seconds(200)).count, 0u);
  EXPECT_EQ(h.summary(seconds(200)).max, Duration::zero());
}

}  // namespace
}  // namespace libnet
