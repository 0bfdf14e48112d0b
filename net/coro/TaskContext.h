// TaskContext: what the coroutines of one detached task share: the loop they
// run on, the cancellation scopes they are inside (withTimeout(), withStop(),
// spawn()'s stop token) and the operation the task is suspended on, so that
// a scope that is cancelled can end that operation at once.
//
// A task is a chain of coroutines (a detached root awaiting a Task awaiting a
// Task ...) of which exactly one runs or is suspended at a time, so one
// "current operation" per task suffices. Owned by the task's root frame
// (net/coro/Detached.h), or, for serve()'s task of a connection, by the
// connection's StreamState, which that root keeps alive; every coroutine of
// the chain points at it. Loop thread only. Part of the layer's inside:
// applications see it only as a name (Task.h).
#pragma once

#include "net/coro/Cancel.h"
#include "net/coro/Errc.h"
#include "net/coro/Operation.h"

namespace libnet {
class EventLoop;
}

namespace libnet::coro {

using detail::CancelScope;

class TaskContext {
 public:
  explicit TaskContext(EventLoop* loop) : loop_(loop) {}
  TaskContext(const TaskContext&) = delete;
  TaskContext& operator=(const TaskContext&) = delete;

  [[nodiscard]] EventLoop* loop() const { return loop_; }
  void setLoop(EventLoop* loop) { loop_ = loop; }

  // Why an operation started now must end at once: the reason of the first
  // cancelled scope it is inside, or kOk. Operations check it before they
  // suspend; a cancelled scope stays cancelled until it is left.
  [[nodiscard]] Errc cancelled() const {
    for (const CancelScope* scope = scope_; scope != nullptr; scope = scope->parent) {
      if (scope->reason != Errc::kOk) return scope->reason;
    }
    return Errc::kOk;
  }

  void enter(CancelScope* scope) {
    scope->parent = scope_;
    scope_ = scope;
  }
  // Scopes are left innermost first, except when a whole chain of frames is
  // destroyed (the loop went away), where the outer awaiter may go first.
  void leave(CancelScope* scope) {
    if (scope_ == scope) {
      scope_ = scope->parent;
      return;
    }
    for (CancelScope* inner = scope_; inner != nullptr; inner = inner->parent) {
      if (inner->parent == scope) {
        inner->parent = scope->parent;
        return;
      }
    }
  }

  // Cancels `scope` (entered and not yet left) for `why`, and ends the
  // operation the task is suspended on, which resumes the task: the caller
  // must touch nothing of the task's afterwards.
  void cancel(CancelScope* scope, Errc why) {
    if (scope->reason == Errc::kOk) scope->reason = why;
    if (detail::Operation* op = current_) {
      current_ = nullptr;
      op->cancel(why);
    }
  }

  // The task suspends on `op` / `op` resumed (or was destroyed).
  void suspendOn(detail::Operation* op) { current_ = op; }
  void resumedFrom(const detail::Operation* op) {
    if (current_ == op) current_ = nullptr;
  }

 private:
  EventLoop* loop_;
  CancelScope* scope_ = nullptr;
  detail::Operation* current_ = nullptr;
};

}  // namespace libnet::coro
