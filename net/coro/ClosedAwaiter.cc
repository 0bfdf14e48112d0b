#include "net/coro/ClosedAwaiter.h"

#include "net/Buffer.h"
#include "net/coro/StreamState.h"

namespace libnet::coro {

ClosedAwaiter::~ClosedAwaiter() {
  if (!suspended()) return;
  state_->clearClosedWaiter(this);
  forgetInTask();
}

bool ClosedAwaiter::await_ready() {
  result_ = state_->end();
  return result_ != Errc::kOk;
}

bool ClosedAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  state_->setClosedWaiter(this);
  return true;
}

void ClosedAwaiter::complete(Errc result) {
  state_->clearClosedWaiter(this);
  resumeWith(result);
}

void ClosedAwaiter::cancel(Errc why) {
  state_->clearClosedWaiter(this);
  resumeWith(why);
}

}  // namespace libnet::coro
