// Mutex and MutexLock: std::mutex and its scoped lock, annotated so that
// Clang's thread-safety analysis (base/ThreadAnnotations.h,
// tools/thread_safety.sh) knows when they are held. A member declared
// LIBNET_GUARDED_BY(mutex_) then fails that check wherever it is touched
// without the lock, instead of waiting for TSan to catch the race at run time.
//
// They are one header because MutexLock is the only way to wait on a
// std::condition_variable with a Mutex: it holds the std::unique_lock that
// the condition variable needs.
//
// Threads: a Mutex is shared by the threads it serialises; a MutexLock is a
// local of the one thread that holds the lock and is never handed to another.
//
//   MutexLock lock(mutex_);
//   lock.wait(cond_, [this]() LIBNET_REQUIRES(mutex_) { return count_ == 0; });
//
// A predicate runs with the mutex held, but the analysis checks a lambda as a
// function of its own and cannot see that: annotating it LIBNET_REQUIRES lets
// it read guarded members, and the analysis still checks everything else.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "base/ThreadAnnotations.h"

namespace libnet {

class LIBNET_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

 private:
  // Taken only through a MutexLock, so no lock is ever left held by an
  // early return or an exception.
  friend class MutexLock;

  std::mutex mutex_;
};

class LIBNET_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) LIBNET_ACQUIRE(mutex) : lock_(mutex.mutex_) {}
  ~MutexLock() LIBNET_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Drop the lock for a while (slow work that needs no lock) and take it
  // again; the destructor releases it only if held.
  void unlock() LIBNET_RELEASE() { lock_.unlock(); }
  void lock() LIBNET_ACQUIRE() { lock_.lock(); }

  // Both release the mutex while blocked and hold it again when they return
  // and whenever `pred` runs, so to the caller it stays held throughout.
  template <class Predicate>
  void wait(std::condition_variable& cond, Predicate pred) {
    cond.wait(lock_, std::move(pred));
  }
  // Returns pred(): false when the timeout expired first.
  template <class Rep, class Period, class Predicate>
  [[nodiscard]] bool waitFor(std::condition_variable& cond,
                             std::chrono::duration<Rep, Period> timeout, Predicate pred) {
    return cond.wait_for(lock_, timeout, std::move(pred));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace libnet
