// LatencyHistogram: durations recorded by one thread (an EventLoop's), read
// as quantiles by any thread, over a sliding window. Two halves of a fixed
// log-linear histogram take turns: samples go into the current half, and
// when it is older than half the window the other, older half is cleared
// and becomes the current one, so a read covers between half the window and
// the whole of it. No allocation and no lock per sample: a few relaxed
// atomic stores. Buckets are four per power of two (a quantile is reported
// as its bucket's upper bound: at most 25% high), from 1 ns to about 18
// minutes (longer samples land in the last bucket); the maximum is exact.
//
// record() from one thread only; summary() from any thread (its counts may
// miss samples recorded while it reads).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "base/Duration.h"

namespace libnet {

class LatencyHistogram {
 public:
  static constexpr int kSubBuckets = 4;  // per power of two
  static constexpr int kMaxBit = 39;     // 2^40 ns (~18 min) and up share the last bucket
  static constexpr int kBuckets = kMaxBit * kSubBuckets;
  static constexpr Duration kDefaultWindow = std::chrono::seconds(10);

  struct Summary {
    uint64_t count = 0;  // samples in the window
    Duration p50{0};
    Duration p99{0};
    Duration max{0};
  };

  explicit LatencyHistogram(Duration window = kDefaultWindow);
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // `now` is a clock reading as time since the clock's epoch, from the same
  // clock for every call of both; negative samples count as zero.
  void record(Duration sample, Duration now);
  // The window ending at `now`: a half older than the window is left out
  // (the recording thread may have stopped recording).
  [[nodiscard]] Summary summary(Duration now) const;

  // The bucket a sample of `nanos` goes in, and the largest sample a bucket
  // holds.
  [[nodiscard]] static int bucketOf(uint64_t nanos);
  [[nodiscard]] static uint64_t upperBound(int bucket);

 private:
  struct Half {
    std::array<std::atomic<uint64_t>, kBuckets> counts{};
    std::atomic<uint64_t> max{0};
    std::atomic<int64_t> start{0};  // ns of MonoTime's epoch; 0: never used
  };

  void rotate(int64_t now);
  static void add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  const int64_t halfNs_;
  std::array<Half, 2> halves_;
  int current_ = 0;  // the recording thread's
};

}  // namespace libnet
