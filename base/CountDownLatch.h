// CountDownLatch: lets threads wait until a count reaches zero. Thread-safe.
// waitFor() bounds the wait, which is what tests use.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace libnet {

class CountDownLatch {
 public:
  explicit CountDownLatch(int count) : count_(count) {}
  CountDownLatch(const CountDownLatch&) = delete;
  CountDownLatch& operator=(const CountDownLatch&) = delete;

  void countDown() {
    std::lock_guard lock(mutex_);
    if (count_ > 0 && --count_ == 0) cond_.notify_all();
  }

  void wait() {
    std::unique_lock lock(mutex_);
    cond_.wait(lock, [this] { return count_ == 0; });
  }

  // Returns true if the count reached zero before the timeout.
  template <class Rep, class Period>
  [[nodiscard]] bool waitFor(std::chrono::duration<Rep, Period> timeout) {
    std::unique_lock lock(mutex_);
    return cond_.wait_for(lock, timeout, [this] { return count_ == 0; });
  }

  [[nodiscard]] int count() const {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cond_;
  int count_;
};

}  // namespace libnet
