// The root coroutine of a detached task (spawn(), serve()'s task of a
// connection): it owns the task's context, or uses one the caller keeps, and
// joins its loop's live tasks, so that a loop destroyed while the task is
// suspended destroys its frames. Part of the layer's inside: applications
// use spawn() (net/coro/Spawn.h) and serve().
#pragma once

#include <coroutine>

#include "net/coro/Task.h"
#include "net/coro/TaskContext.h"

namespace libnet {
class EventLoop;
}

namespace libnet::coro {

namespace detail {

class DetachedPromise;

// The root coroutine of a detached task: it owns the task context.
struct Detached {
  using promise_type = DetachedPromise;
  std::coroutine_handle<DetachedPromise> handle;
};

class DetachedPromise : public FrameBase {
 public:
  DetachedPromise() { context_ = &taskContext_; }
  ~DetachedPromise();
  DetachedPromise(const DetachedPromise&) = delete;
  DetachedPromise& operator=(const DetachedPromise&) = delete;

  Detached get_return_object() noexcept {
    return {std::coroutine_handle<DetachedPromise>::from_promise(*this)};
  }
  std::suspend_always initial_suspend() noexcept { return {}; }
  std::suspend_never final_suspend() noexcept { return {}; }  // frees the frame
  void return_void() noexcept {}
  void unhandled_exception() noexcept;

  // Before startOn(): the task's context lives in `context` instead, which
  // must outlive every frame of the task (serve() puts it in the
  // connection's StreamState, next to what a message touches anyway).
  void useContext(TaskContext* context) { context_ = context; }
  // Loop thread: joins the loop's live tasks, then runs until it suspends.
  void startOn(EventLoop* loop);

 private:
  friend class Registry;
  TaskContext taskContext_{nullptr};
  DetachedPromise* prev_ = nullptr;
  DetachedPromise* next_ = nullptr;
  bool linked_ = false;
};

// Starts a root made by the caller (serve() makes one per connection):
// at once on the loop's thread, else through its queue.
void startDetached(EventLoop* loop, Detached root);

}  // namespace detail

}  // namespace libnet::coro
