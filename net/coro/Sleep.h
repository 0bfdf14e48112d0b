// sleep(): suspends the task for a while, on its loop's timers.
//
//   Errc e = co_await sleep(100ms);  // kOk, or kTimedOut/kCancelled if a
//                                    // scope around it was cancelled
//
// Loop thread. One timer per sleep (the loop's TimerQueue); destroying the
// task while it sleeps cancels the timer.
#pragma once

#include <chrono>
#include <coroutine>

#include "base/Duration.h"
#include "net/TimerId.h"
#include "net/coro/Errc.h"
#include "net/coro/Operation.h"

namespace libnet::coro {

class SleepAwaiter : public detail::Operation {
 public:
  explicit SleepAwaiter(Duration delay) : delay_(delay) {}
  SleepAwaiter(SleepAwaiter&&) noexcept = default;  // before awaiting
  SleepAwaiter& operator=(SleepAwaiter&&) = delete;
  ~SleepAwaiter();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] Errc await_resume() const noexcept { return result_; }

 private:
  void cancel(Errc why) override;
  bool suspend(std::coroutine_handle<> awaiting, TaskContext* context);
  void fire();

  Duration delay_;
  TimerId timer_;
};

[[nodiscard]] inline SleepAwaiter sleep(Duration delay) { return SleepAwaiter(delay); }

}  // namespace libnet::coro
