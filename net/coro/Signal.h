// nextSignal(): suspends the task until the SignalSet delivers a signal
// (net/SignalSet.h), and resumes it with the signal's number.
//
//   SignalSet stop(loop, {SIGINT, SIGTERM});
//   SignalResult s = co_await nextSignal(stop);
//   if (s) LOG_INFO << "stopping on signal " << s.signo;
//
// Every task suspended on the set when a signal is delivered gets it; a
// signal delivered while none is suspended is kept, once per signal number,
// for the next co_await, which then ends at once. A set with a callback
// gives every signal to the callback first, then as described here.
// Results: kOk with the number; kTimedOut/kCancelled if a withTimeout() /
// withStop() scope around it ended it (a kept signal stays kept); kClosed if
// the set was destroyed while the task waited.
//
// Loop thread: the task must run on the set's loop. Not part of Coro.h:
// include this header.
#pragma once

#include <coroutine>

#include "net/SignalSet.h"
#include "net/coro/Errc.h"
#include "net/coro/Operation.h"

namespace libnet::coro {

struct SignalResult {
  int signo = 0;  // kOk: the signal
  Errc error = Errc::kOk;
  [[nodiscard]] explicit operator bool() const { return error == Errc::kOk; }
};

class SignalAwaiter : public detail::Operation, private SignalSet::Waiter {
 public:
  explicit SignalAwaiter(SignalSet& set) : set_(&set) {}
  SignalAwaiter(SignalAwaiter&& other) noexcept  // before awaiting
      : detail::Operation(std::move(other)), set_(other.set_) {}
  SignalAwaiter& operator=(SignalAwaiter&&) = delete;
  ~SignalAwaiter();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] SignalResult await_resume() const noexcept { return {signo_, result_}; }

 private:
  void cancel(Errc why) override;
  void signalled(int signo) override;
  void setClosed() override;
  bool suspend(std::coroutine_handle<> awaiting, TaskContext* context);

  SignalSet* set_;
  int signo_ = 0;
  bool registered_ = false;
};

[[nodiscard]] inline SignalAwaiter nextSignal(SignalSet& set) { return SignalAwaiter(set); }

}  // namespace libnet::coro
