#include "net/coro/Cancel.h"

#include "net/EventLoop.h"

namespace libnet::coro::detail {

void TimeoutScope::enter(TaskContext* context) {
  context_ = context;
  context->enter(&scope_);
  timer_ = context->loop()->runAfter(timeout_, [this] {
    timer_ = TimerId();
    context_->cancel(&scope_, Errc::kTimedOut);
  });
}

void TimeoutScope::leave() {
  if (context_ == nullptr) return;
  if (timer_.valid()) context_->loop()->cancel(timer_);
  timer_ = TimerId();
  context_->leave(&scope_);
  context_ = nullptr;
}

void StopScope::Request::operator()() const {
  // Any thread: the scope is touched on the loop only.
  relay->loop->queueInLoop([relay = relay] {
    if (relay->scope != nullptr) relay->context->cancel(relay->scope, Errc::kCancelled);
  });
}

void StopScope::enter(TaskContext* context) {
  context_ = context;
  context->enter(&scope_);
  if (stop_.stop_requested()) {
    scope_.reason = Errc::kCancelled;
    return;
  }
  if (!stop_.stop_possible()) return;
  relay_ = std::make_shared<Relay>(Relay{context->loop(), context, &scope_});
  callback_.emplace(stop_, Request{relay_});
}

void StopScope::leave() {
  if (context_ == nullptr) return;
  // Waits for a stop callback running on another thread right now; after
  // this none starts.
  callback_.reset();
  if (relay_) relay_->scope = nullptr;
  relay_.reset();
  context_->leave(&scope_);
  context_ = nullptr;
}

}  // namespace libnet::coro::detail
