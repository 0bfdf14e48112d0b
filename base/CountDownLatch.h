// CountDownLatch: lets threads wait until a count reaches zero. Thread-safe.
// waitFor() bounds the wait, which is what tests use.
#pragma once

#include <chrono>
#include <condition_variable>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"

namespace libnet {

class CountDownLatch {
 public:
  explicit CountDownLatch(int count) : count_(count) {}
  CountDownLatch(const CountDownLatch&) = delete;
  CountDownLatch& operator=(const CountDownLatch&) = delete;

  void countDown() LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    if (count_ > 0 && --count_ == 0) cond_.notify_all();
  }

  void wait() LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    lock.wait(cond_, [this]() LIBNET_REQUIRES(mutex_) { return count_ == 0; });
  }

  // Returns true if the count reached zero before the timeout.
  template <class Rep, class Period>
  [[nodiscard]] bool waitFor(std::chrono::duration<Rep, Period> timeout) LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return lock.waitFor(cond_, timeout, [this]() LIBNET_REQUIRES(mutex_) { return count_ == 0; });
  }

  [[nodiscard]] int count() const LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return count_;
  }

 private:
  mutable Mutex mutex_;
  std::condition_variable cond_;
  int count_ LIBNET_GUARDED_BY(mutex_);
};

}  // namespace libnet
