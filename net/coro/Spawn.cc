#include "net/coro/Spawn.h"

#include <cassert>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/coro/Cancel.h"
#include "net/coro/Detached.h"

namespace libnet::coro {

namespace detail {

// The live detached tasks of this thread's loop (a loop belongs to one
// thread, and its tasks run there only), destroyed with the loop.
class Registry {
 public:
  static Registry& forThisThread() {
    thread_local Registry registry;
    return registry;
  }

  void link(DetachedPromise* task, EventLoop* loop) {
    if (loop_ != loop) {
      assert(head_ == nullptr);
      loop_ = loop;
      loop->runOnDestroy([this] { destroyAll(); });
    }
    task->next_ = head_;
    if (head_ != nullptr) head_->prev_ = task;
    head_ = task;
    task->linked_ = true;
    ++count_;
  }

  void unlink(DetachedPromise* task) {
    if (!task->linked_) return;
    if (task->prev_ != nullptr) task->prev_->next_ = task->next_;
    if (task->next_ != nullptr) task->next_->prev_ = task->prev_;
    if (head_ == task) head_ = task->next_;
    task->linked_ = false;
    --count_;
  }

  [[nodiscard]] size_t count() const { return count_; }

 private:
  // The loop is going: the tasks still suspended on it can never resume.
  void destroyAll() {
    while (head_ != nullptr) {
      // Unlinks itself as its promise goes.
      std::coroutine_handle<DetachedPromise>::from_promise(*head_).destroy();
    }
    loop_ = nullptr;
  }

  EventLoop* loop_ = nullptr;
  DetachedPromise* head_ = nullptr;
  size_t count_ = 0;
};

DetachedPromise::~DetachedPromise() { Registry::forThisThread().unlink(this); }

void DetachedPromise::unhandled_exception() noexcept {
  (void)callGuarded("detached coroutine", [] { throw; });
}

void DetachedPromise::startOn(EventLoop* loop) {
  loop->assertInLoopThread();
  context_->setLoop(loop);
  Registry::forThisThread().link(this, loop);
  std::coroutine_handle<DetachedPromise>::from_promise(*this).resume();
}

void startDetached(EventLoop* loop, Detached root) {
  if (loop->isInLoopThread()) {
    root.handle.promise().startOn(loop);
  } else {
    loop->queueInLoop([loop, handle = root.handle] { handle.promise().startOn(loop); });
  }
}

namespace {

// The task is moved into a local first: a parameter outlives the promise
// (and with it the task context that the task's frames point at) when the
// frame is destroyed while suspended.
Detached runDetached(Task<> task) {
  Task<> local = std::move(task);
  co_await std::move(local);
}

Detached runDetachedUntilStop(Task<> task, std::stop_token stop) {
  Task<> local = std::move(task);
  co_await withStop(std::move(stop), std::move(local));
}

}  // namespace

}  // namespace detail

void spawn(EventLoop* loop, Task<> task) {
  if (!task.valid()) return;
  detail::startDetached(loop, detail::runDetached(std::move(task)));
}

void spawn(EventLoop* loop, Task<> task, std::stop_token stop) {
  if (!task.valid()) return;
  detail::startDetached(loop, detail::runDetachedUntilStop(std::move(task), std::move(stop)));
}

size_t detachedTaskCount() { return detail::Registry::forThisThread().count(); }

}  // namespace libnet::coro
