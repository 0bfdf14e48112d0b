#include "net/coro/Operation.h"

#include "net/coro/TaskContext.h"

namespace libnet::coro::detail {

bool Operation::prepareSuspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  if (const Errc why = context->cancelled(); why != Errc::kOk) {
    result_ = why;
    return false;
  }
  context_ = context;
  awaiting_ = awaiting;
  context->suspendOn(this);
  return true;
}

void Operation::resumeWith(Errc result) {
  context_->resumedFrom(this);
  result_ = result;
  awaiting_.resume();
}

void Operation::forgetInTask() {
  if (context_ != nullptr) context_->resumedFrom(this);
}

}  // namespace libnet::coro::detail
