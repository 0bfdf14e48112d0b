#include "net/LatencyHistogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace libnet {

LatencyHistogram::LatencyHistogram(Duration window)
    : halfNs_(std::max<int64_t>(1, window.count() / 2)) {}

int LatencyHistogram::bucketOf(uint64_t nanos) {
  if (nanos < kSubBuckets) return static_cast<int>(nanos);
  const int msb = 63 - std::countl_zero(nanos);
  if (msb > kMaxBit) return kBuckets - 1;
  const int sub = static_cast<int>((nanos >> (msb - 2)) & (kSubBuckets - 1));
  return std::min(kBuckets - 1, (msb - 1) * kSubBuckets + sub);
}

uint64_t LatencyHistogram::upperBound(int bucket) {
  if (bucket < kSubBuckets) return static_cast<uint64_t>(bucket);
  const int msb = bucket / kSubBuckets + 1;
  const uint64_t sub = static_cast<uint64_t>(bucket % kSubBuckets);
  return ((kSubBuckets + sub + 1) << (msb - 2)) - 1;
}

void LatencyHistogram::rotate(int64_t now) {
  const int older = 1 - current_;
  Half& next = halves_[static_cast<size_t>(older)];
  for (std::atomic<uint64_t>& count : next.counts) count.store(0, std::memory_order_relaxed);
  next.max.store(0, std::memory_order_relaxed);
  next.start.store(now, std::memory_order_relaxed);
  current_ = older;
}

void LatencyHistogram::record(Duration sample, Duration now) {
  const int64_t t = now.count();
  Half* half = &halves_[static_cast<size_t>(current_)];
  const int64_t start = half->start.load(std::memory_order_relaxed);
  if (start == 0 || t - start >= halfNs_) {
    rotate(t);
    half = &halves_[static_cast<size_t>(current_)];
  }
  const uint64_t nanos = sample.count() > 0 ? static_cast<uint64_t>(sample.count()) : 0;
  add(half->counts[static_cast<size_t>(bucketOf(nanos))], 1);
  if (nanos > half->max.load(std::memory_order_relaxed)) {
    half->max.store(nanos, std::memory_order_relaxed);
  }
}

LatencyHistogram::Summary LatencyHistogram::summary(Duration now) const {
  const int64_t t = now.count();
  std::array<uint64_t, kBuckets> counts{};
  Summary result;
  uint64_t max = 0;
  for (const Half& half : halves_) {
    const int64_t start = half.start.load(std::memory_order_relaxed);
    if (start == 0 || t - start >= 2 * halfNs_) continue;
    for (size_t i = 0; i < counts.size(); ++i) {
      const uint64_t n = half.counts[i].load(std::memory_order_relaxed);
      counts[i] += n;
      result.count += n;
    }
    max = std::max(max, half.max.load(std::memory_order_relaxed));
  }
  result.max = Duration(static_cast<int64_t>(max));
  if (result.count == 0) return result;
  const auto quantile = [&](double q) {
    const auto rank = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(result.count))));
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts[static_cast<size_t>(i)];
      if (seen >= rank) return Duration(static_cast<int64_t>(std::min(upperBound(i), max)));
    }
    return result.max;
  };
  result.p50 = quantile(0.5);
  result.p99 = quantile(0.99);
  return result;
}

}  // namespace libnet
