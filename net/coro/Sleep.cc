#include "net/coro/Sleep.h"

#include "net/EventLoop.h"

namespace libnet::coro {

SleepAwaiter::~SleepAwaiter() {
  if (context_ == nullptr) return;
  if (timer_.valid()) context_->loop()->cancel(timer_);
  context_->resumedFrom(this);
}

bool SleepAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  context_ = context;
  if (const Errc why = context->cancelled(); why != Errc::kOk) {
    result_ = why;
    return false;
  }
  awaiting_ = awaiting;
  timer_ = context->loop()->runAfter(delay_, [this] { fire(); });
  context->suspendOn(this);
  return true;
}

void SleepAwaiter::fire() {
  timer_ = TimerId();
  context_->resumedFrom(this);
  awaiting_.resume();
}

void SleepAwaiter::cancel(Errc why) {
  context_->loop()->cancel(timer_);
  timer_ = TimerId();
  result_ = why;
  awaiting_.resume();
}

}  // namespace libnet::coro
