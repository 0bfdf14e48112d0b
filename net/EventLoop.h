// EventLoop: the reactor. One per thread, at most: the thread that constructs
// a loop owns it, and only that thread may call loop() and the loop-only
// methods (they check, and abort naming both threads if called elsewhere).
//
// Thread-safe entry points: quit(), runInLoop(), queueInLoop(), runAt(),
// runAfter(), runEvery(), cancel(), isInLoopThread(), wakeup().
// Cross-thread work is queued under a short lock and the loop is woken through
// an eventfd; wake-ups requested while one is already pending are merged into
// it, so a burst of queueInLoop() calls costs one eventfd write.
//
// The loop owns its Poller and TimerQueue. Exceptions thrown by callbacks are
// caught and logged: none escapes loop().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "base/Timestamp.h"
#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/Channel.h"
#include "net/PollerKind.h"
#include "net/TimerId.h"

namespace libnet {

class Buffer;
class BufferPool;
class Poller;
class TimerQueue;

class EventLoop {
 public:
  using Functor = std::function<void()>;

  // Throws std::system_error if a kernel object cannot be created. Aborts if
  // this thread already has a loop.
  explicit EventLoop(PollerKind kind = PollerKind::kAuto);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until quit(). Loop thread only; not reentrant.
  void loop();
  // Makes loop() return after the current iteration. Any thread.
  void quit();

  // Runs `cb` now if called on the loop thread, else queues it.
  void runInLoop(Functor cb);
  // Queues `cb` to run on the loop thread after the current batch of events.
  // Functors queued from one thread run in the order they were queued.
  void queueInLoop(Functor cb);
  [[nodiscard]] size_t queueSize() const;

  // Loop thread. Runs `cb` when the loop is destroyed, on the destroying
  // thread: after the work still queued has run, before the timers and the
  // backend go (what it queues in turn still runs). The coroutine layer
  // destroys the tasks still suspended on this loop there (net/coro/Spawn.h).
  void runOnDestroy(Functor cb);

  // Timers on the monotonic clock. Any thread.
  TimerId runAt(MonoTime when, TimerCallback cb);
  TimerId runAfter(Duration delay, TimerCallback cb);
  TimerId runEvery(Duration interval, TimerCallback cb);
  void cancel(TimerId timerId);

  // Loop thread only (used by Channel).
  void updateChannel(Channel* channel);
  void removeChannel(Channel* channel);
  void removeChannelBeforeClose(Channel* channel);

  [[nodiscard]] bool isInLoopThread() const;
  void assertInLoopThread() const {
    if (!isInLoopThread()) abortNotInLoopThread();
  }
  void wakeup();

  // The backend this loop runs on (never kAuto).
  [[nodiscard]] PollerKind pollerKind() const { return pollerKind_; }
  // The kind it was constructed with, which loops made for it (an
  // EventLoopThreadPool's) ask for in turn: a kAuto loop's helpers may each
  // end up on a different backend, and must not be forced onto io_uring
  // because this one got it.
  [[nodiscard]] PollerKind requestedPollerKind() const { return requestedKind_; }
  // The backend, for the library's I/O classes (TcpConnection and Acceptor
  // get their I/O strategies from it) and for the backends' own tests.
  [[nodiscard]] Poller& poller() { return *poller_; }
  [[nodiscard]] pid_t threadId() const { return threadId_; }
  [[nodiscard]] Timestamp pollReturnTime() const { return pollReturnTime_; }
  [[nodiscard]] int64_t iteration() const { return iteration_; }
  // Number of eventfd writes so far (merged wake-ups are not counted).
  [[nodiscard]] uint64_t wakeupCount() const {
    return wakeupCount_.load(std::memory_order_relaxed);
  }

  // A buffer that connections on this loop read into when they have nothing
  // buffered (the epoll strategy, net/poller/EpollConnectionIo); the
  // connection empties it after each delivery (TcpConnection::deliverInput),
  // whatever its callback did. Loop thread only; empty between uses.
  [[nodiscard]] Buffer* scratchBuffer() { return scratch_.get(); }
  // Spare buffer storage for this loop's connections (see BufferPool).
  // Loop thread only.
  [[nodiscard]] BufferPool& bufferPool() { return *bufferPool_; }

  // The loop of the calling thread, or nullptr.
  static EventLoop* currentThreadLoop();

 private:
  [[noreturn]] void abortNotInLoopThread() const;
  void handleWakeup();
  void doPendingFunctors();
  void drainPendingFunctors();
  void drainOperationsInFlight();

  const pid_t threadId_;
  std::atomic<bool> looping_{false};
  std::atomic<bool> quit_{false};
  bool dispatchingEvents_ = false;
  // Running queued functors (doPendingFunctors): what they queue in turn runs
  // in a second round right after, or, past that, makes the next poll return
  // at once; either way without writing the eventfd.
  bool runningFunctors_ = false;
  bool queuedByLoop_ = false;  // functors queued during the last round wait
  int64_t iteration_ = 0;
  Timestamp pollReturnTime_;
  PollerKind requestedKind_;
  PollerKind pollerKind_;
  std::unique_ptr<Poller> poller_;
  std::unique_ptr<TimerQueue> timerQueue_;
  UniqueFd wakeupFd_;
  std::unique_ptr<Channel> wakeupChannel_;
  std::vector<Channel*> activeChannels_;
  std::unique_ptr<Buffer> scratch_;
  std::unique_ptr<BufferPool> bufferPool_;
  Timestamp lastHeapTrim_;  // BufferPool::trimHeap()

  std::atomic<bool> wakeupPending_{false};
  std::atomic<uint64_t> wakeupCount_{0};
  mutable std::mutex mutex_;
  std::vector<Functor> pendingFunctors_;  // guarded by mutex_
  std::vector<Functor> functors_;         // the batch being run (loop thread)
  std::vector<Functor> destroyHooks_;     // runOnDestroy() (loop thread)
};

}  // namespace libnet
