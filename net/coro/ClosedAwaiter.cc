#include "net/coro/ClosedAwaiter.h"

namespace libnet::coro {

ClosedAwaiter::~ClosedAwaiter() {
  if (context_ == nullptr) return;
  state_->clearClosedWaiter(this);
  context_->resumedFrom(this);
}

bool ClosedAwaiter::await_ready() {
  if (state_->closed()) {
    result_ = Errc::kClosed;
    return true;
  }
  if (state_->peerClosed()) {
    result_ = Errc::kEof;
    return true;
  }
  return false;
}

bool ClosedAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  if (const Errc why = context->cancelled(); why != Errc::kOk) {
    result_ = why;
    return false;
  }
  context_ = context;
  awaiting_ = awaiting;
  context->suspendOn(this);
  state_->setClosedWaiter(this);
  return true;
}

void ClosedAwaiter::complete(Errc result) {
  state_->clearClosedWaiter(this);
  context_->resumedFrom(this);
  result_ = result;
  awaiting_.resume();  // may destroy this
}

void ClosedAwaiter::cancel(Errc why) {
  state_->clearClosedWaiter(this);
  result_ = why;
  awaiting_.resume();
}

}  // namespace libnet::coro
