#include "net/coro/Signal.h"

#include "net/EventLoop.h"
#include "net/coro/TaskContext.h"

namespace libnet::coro {

SignalAwaiter::~SignalAwaiter() {
  if (registered_) set_->removeWaiter(this);
  if (suspended()) forgetInTask();
}

bool SignalAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  set_->loop()->assertInLoopThread();
  // A cancelled scope ends it before a kept signal is taken, as it ends any
  // operation started inside it.
  if (const Errc why = context->cancelled(); why != Errc::kOk) {
    result_ = why;
    return false;
  }
  if (const std::optional<int> kept = set_->takePending()) {
    signo_ = *kept;
    return false;
  }
  if (!prepareSuspend(awaiting, context)) return false;
  if (!set_->addWaiter(this)) {
    forgetInTask();
    result_ = Errc::kClosed;
    return false;
  }
  registered_ = true;
  return true;
}

void SignalAwaiter::signalled(int signo) {
  registered_ = false;
  signo_ = signo;
  resumeWith(Errc::kOk);
}

void SignalAwaiter::setClosed() {
  registered_ = false;
  resumeWith(Errc::kClosed);
}

void SignalAwaiter::cancel(Errc why) {
  registered_ = false;
  set_->removeWaiter(this);
  resumeWith(why);
}

}  // namespace libnet::coro
