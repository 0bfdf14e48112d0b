// spawn(): runs a Task<> on a loop with no one awaiting it (a detached task).
// The library owns it from then on: its frames are freed when it finishes,
// and, if the loop is destroyed while it is still suspended, there (see
// "Lifetimes" in docs/coroutines.md): every awaitable undoes its
// registration as its frame goes, so nothing leaks and nothing resumes it
// afterwards.
//
// spawn() may be called from any thread. On the loop's thread the task
// starts at once and runs until it first suspends before spawn() returns;
// from another thread it is queued and starts on the loop. Either way it
// runs on that loop only. An exception escaping the task is logged at ERROR.
//
// With a std::stop_token, a stop request (from any thread) cancels the task:
// the operation it is suspended on, and every one it starts afterwards, ends
// with Errc::kCancelled (delivered on the loop, through its queue).
#pragma once

#include <cstddef>
#include <stop_token>

#include "net/coro/Task.h"

namespace libnet {
class EventLoop;
}

namespace libnet::coro {

void spawn(EventLoop* loop, Task<> task);
void spawn(EventLoop* loop, Task<> task, std::stop_token stop);

// Detached tasks of the calling thread's loop that have not finished yet.
[[nodiscard]] size_t detachedTaskCount();

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
