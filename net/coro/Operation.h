// Operation: what every suspending awaitable of the layer shares (a read, a
// write, closed(), a sleep, a connect): the task it suspended in, the
// coroutine to resume, and how it ended. Each operation adds its own
// registration (a reader slot, a timer, ...), made when it suspends and
// undone when it resumes, is cancelled, or is destroyed with its frame.
#pragma once

#include <coroutine>

#include "net/coro/Errc.h"
#include "net/coro/TaskContext.h"

namespace libnet::coro {

class Operation : public Cancelable {
 protected:
  Operation() = default;
  ~Operation() = default;
  // Awaiters are moved only before they are awaited: nothing to carry over.
  Operation(Operation&&) noexcept {}
  Operation& operator=(Operation&&) = delete;

  // Before suspending: false, with the result set, if a scope around the
  // task is cancelled already (the operation then ends at once); otherwise
  // records the coroutine and tells the task what it is suspended on.
  bool prepareSuspend(std::coroutine_handle<> awaiting, TaskContext* context) {
    if (const Errc why = context->cancelled(); why != Errc::kOk) {
      result_ = why;
      return false;
    }
    context_ = context;
    awaiting_ = awaiting;
    context->suspendOn(this);
    return true;
  }
  // Ends the operation with `result` and resumes the coroutine, which may
  // destroy this before it returns.
  void resumeWith(Errc result) {
    context_->resumedFrom(this);
    result_ = result;
    awaiting_.resume();
  }
  // Whether it has suspended (and so registered) at some point.
  [[nodiscard]] bool suspended() const { return context_ != nullptr; }
  // For a destructor: the task is no longer suspended on this.
  void forgetInTask() {
    if (context_ != nullptr) context_->resumedFrom(this);
  }

  Errc result_ = Errc::kOk;
  TaskContext* context_ = nullptr;
  std::coroutine_handle<> awaiting_;
};

}  // namespace libnet::coro
