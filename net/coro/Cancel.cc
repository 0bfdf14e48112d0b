#include "net/coro/Cancel.h"

#include <optional>

#include "net/EventLoop.h"
#include "net/coro/TaskContext.h"

namespace libnet::coro::detail {

// What a withStop()'s callback reaches. The loop side clears `scope` when
// the scope is left; the callback holds a plain pointer (the scope removes
// the callback, waiting for a run in progress, before it lets go of the
// relay), and what the callback queues on the loop holds a reference.
struct StopRelay : std::enable_shared_from_this<StopRelay> {
  struct Request {
    StopRelay* relay;
    void operator()() const;
  };

  StopRelay(EventLoop* l, TaskContext* c, CancelScope* s) : loop(l), context(c), scope(s) {}

  EventLoop* loop;
  TaskContext* context;
  CancelScope* scope;
  std::optional<std::stop_callback<Request>> callback;
};

void StopRelay::Request::operator()() const {
  // Any thread: the scope is touched on the loop only.
  relay->loop->queueInLoop([relay = relay->shared_from_this()] {
    if (relay->scope != nullptr) relay->context->cancel(relay->scope, Errc::kCancelled);
  });
}

void ScopeGuard::enter(TaskContext* context) {
  context_ = context;
  context->enter(&scope_);
  if (!byStop_) {
    timer_ = context->loop()->runAfter(timeout_, [this] {
      timer_ = TimerId();
      context_->cancel(&scope_, Errc::kTimedOut);
    });
    return;
  }
  if (stop_.stop_requested()) {
    scope_.reason = Errc::kCancelled;
    return;
  }
  if (!stop_.stop_possible()) return;
  relay_ = std::make_shared<StopRelay>(context->loop(), context, &scope_);
  relay_->callback.emplace(stop_, StopRelay::Request{relay_.get()});
}

void ScopeGuard::leave() {
  if (context_ == nullptr) return;
  if (timer_.valid()) context_->loop()->cancel(timer_);
  timer_ = TimerId();
  if (relay_) {
    // Waits for a stop callback running on another thread right now; after
    // this none starts.
    relay_->callback.reset();
    relay_->scope = nullptr;
    relay_.reset();
  }
  context_->leave(&scope_);
  context_ = nullptr;
}

}  // namespace libnet::coro::detail
