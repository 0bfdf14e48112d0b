// detail::Operation: what every suspending awaitable of the layer shares (a
// read, a write, closed(), a sleep, a connect): the task it suspended in, the
// coroutine to resume, and how it ended. Each operation adds its own
// registration (a reader slot, a timer, ...), made when it suspends and
// undone when it resumes, is cancelled, or is destroyed with its frame.
// Only the layout is here, so that awaiters can be returned by value; the
// members are defined in Operation.cc, next to the task context they use.
#pragma once

#include <coroutine>

#include "net/coro/Errc.h"

namespace libnet::coro {

class TaskContext;

namespace detail {

// An operation the library can end early: its coroutine is suspended on
// it while it is the task's current operation.
class Operation {
 public:
  // Resume the suspended coroutine now, the operation ending with `why`.
  virtual void cancel(Errc why) = 0;

 protected:
  Operation() = default;
  ~Operation() = default;
  // Awaiters are moved only before they are awaited: nothing to carry over.
  Operation(Operation&&) noexcept {}
  Operation& operator=(Operation&&) = delete;

  // Before suspending: false, with the result set, if a scope around the
  // task is cancelled already (the operation then ends at once); otherwise
  // records the coroutine and tells the task what it is suspended on.
  bool prepareSuspend(std::coroutine_handle<> awaiting, TaskContext* context);
  // Ends the operation with `result` and resumes the coroutine, which may
  // destroy this before it returns.
  void resumeWith(Errc result);
  // Whether it has suspended (and so registered) at some point.
  [[nodiscard]] bool suspended() const { return context_ != nullptr; }
  // For a destructor: the task is no longer suspended on this.
  void forgetInTask();

  Errc result_ = Errc::kOk;
  TaskContext* context_ = nullptr;
  std::coroutine_handle<> awaiting_;
};

}  // namespace detail

}  // namespace libnet::coro
