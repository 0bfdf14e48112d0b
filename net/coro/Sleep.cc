#include "net/coro/Sleep.h"

#include "net/EventLoop.h"
#include "net/coro/TaskContext.h"

namespace libnet::coro {

SleepAwaiter::~SleepAwaiter() {
  if (!suspended()) return;
  if (timer_.valid()) context_->loop()->cancel(timer_);
  forgetInTask();
}

bool SleepAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  timer_ = context->loop()->runAfter(delay_, [this] { fire(); });
  return true;
}

void SleepAwaiter::fire() {
  timer_ = TimerId();
  resumeWith(Errc::kOk);
}

void SleepAwaiter::cancel(Errc why) {
  context_->loop()->cancel(timer_);
  timer_ = TimerId();
  resumeWith(why);
}

}  // namespace libnet::coro
