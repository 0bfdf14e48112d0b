// withTimeout() and withStop(): a cancellation scope around any awaitable (a
// Task, a read, a write, a sleep, a connect).
//
//   Input in = co_await withTimeout(5s, stream.readUntil("\r\n\r\n"));
//   co_await withStop(token, handleClient(std::move(stream)));
//
// When the timeout expires (or the stop is requested), the library operation
// the task is suspended on inside the scope ends at once with
// Errc::kTimedOut (kCancelled), and so does every operation started inside
// the scope afterwards: the code inside sees an ordinary error result and
// unwinds as it chooses. The wrapper returns whatever the awaitable returns.
// An operation not of the library (an awaitable of your own) is not
// interrupted; the next library operation inside the scope ends at once.
//
// Nesting works as expected: the innermost scope's reason is reported only
// when it is the one that fired. The stop callback may run on any thread; it
// reaches the loop through its queue. Loop thread otherwise; one timer (or
// one stop registration) per use.
#pragma once

#include <chrono>
#include <coroutine>
#include <memory>
#include <stop_token>
#include <utility>

#include "base/Duration.h"
#include "net/TimerId.h"
#include "net/coro/Errc.h"
#include "net/coro/Task.h"

namespace libnet::coro {

namespace detail {

// A region of a task that can be cancelled as a whole (see TaskContext).
struct CancelScope {
  CancelScope* parent = nullptr;
  Errc reason = Errc::kOk;  // not kOk once cancelled
};

struct StopRelay;  // Cancel.cc

// The scope of a withTimeout() (a timer on the task's loop that cancels it)
// or of a withStop() (a std::stop_callback that cancels it from the loop).
// Lives in the frame of the coroutine that entered it.
class ScopeGuard {
 public:
  explicit ScopeGuard(Duration timeout) : timeout_(timeout) {}
  explicit ScopeGuard(std::stop_token stop) : stop_(std::move(stop)), byStop_(true) {}
  ScopeGuard(ScopeGuard&& other) noexcept  // before entering
      : timeout_(other.timeout_), stop_(std::move(other.stop_)), byStop_(other.byStop_) {}
  ScopeGuard& operator=(ScopeGuard&&) = delete;
  ~ScopeGuard() { leave(); }

  void enter(TaskContext* context);
  void leave();

 private:
  Duration timeout_{};
  std::stop_token stop_;
  bool byStop_ = false;
  TaskContext* context_ = nullptr;
  CancelScope scope_;
  TimerId timer_;
  // Shared with the stop callback, which may outlive the scope on another
  // thread.
  std::shared_ptr<StopRelay> relay_;
};

// A scope around an awaiter.
template <class Awaiter>
class Scoped {
 public:
  Scoped(ScopeGuard scope, Awaiter inner) : scope_(std::move(scope)), inner_(std::move(inner)) {}

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    scope_.enter(awaiting.promise().context());
    if (inner_.await_ready()) return false;
    return suspendOn(inner_, awaiting);
  }
  decltype(auto) await_resume() {
    scope_.leave();
    return inner_.await_resume();
  }

 private:
  // Declared first so that it goes last: the inner awaiter (and the frames
  // it owns) leaves its own scopes before this one is left.
  ScopeGuard scope_;
  Awaiter inner_;
};

}  // namespace detail

template <class A>
auto withTimeout(Duration timeout, A&& awaitable) {
  auto inner = detail::awaiterOf(std::forward<A>(awaitable));
  return detail::Scoped<decltype(inner)>(detail::ScopeGuard(timeout), std::move(inner));
}

template <class A>
auto withStop(std::stop_token stop, A&& awaitable) {
  auto inner = detail::awaiterOf(std::forward<A>(awaitable));
  return detail::Scoped<decltype(inner)>(detail::ScopeGuard(std::move(stop)), std::move(inner));
}

}  // namespace libnet::coro
