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
// caught and logged: none escapes loop(). What the pieces below the loop use
// of it (Channels, the TimerQueue, the backends) is EventLoopBase.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "base/Timestamp.h"
#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/Channel.h"
#include "net/EventLoopBase.h"
#include "net/EventLoopOptions.h"
#include "net/LatencyHistogram.h"
#include "net/PollerKind.h"
#include "net/TimerId.h"

namespace libnet {

class TimerQueue;

class EventLoop final : public EventLoopBase {
 public:
  // Named as the other classes' options (TcpServer::Options, ...); defined
  // in net/EventLoopOptions.h because the backends read it too.
  using Options = EventLoopOptions;

  // Throws std::system_error if a kernel object cannot be created (or, for
  // an explicit kIoUring, if io_uring cannot run: see PollerKind). Aborts if
  // this thread already has a loop.
  explicit EventLoop(PollerKind kind = PollerKind::kAuto);
  explicit EventLoop(const EventLoopOptions& options);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until quit(). Loop thread only; not reentrant.
  void loop();
  // Makes loop() return after the current iteration. Any thread.
  void quit();

  // Queues `cb` to run on the loop thread after the current batch of events.
  // Functors queued from one thread run in the order they were queued.
  void queueInLoop(Functor cb) override;
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

  void wakeup();

  // The backend this loop runs on (never kAuto).
  [[nodiscard]] PollerKind pollerKind() const { return pollerKind_; }
  // The kind it was constructed with, which loops made for it (an
  // EventLoopThreadPool's) ask for in turn: a kAuto loop's helpers may each
  // end up on a different backend, and must not be forced onto io_uring
  // because this one got it.
  [[nodiscard]] PollerKind requestedPollerKind() const { return options_.poller; }
  // The options it was constructed with (requestedPollerKind() among them),
  // which an EventLoopThreadPool's loops get in turn.
  [[nodiscard]] const EventLoopOptions& options() const { return options_; }
  [[nodiscard]] int64_t iteration() const { return iteration_; }
  // What the loop has done, for monitoring (net/metrics renders it). Any
  // thread: each field is read on its own (relaxed), so they may be a turn
  // apart from each other.
  struct Metrics {
    uint64_t turns = 0;  // poller returns handled
    // Time spent handling a turn (events, completions, timers, queued
    // functors), i.e. not waiting in the poller; zero with
    // Options::metrics off.
    Duration busy{0};
    // Loop lag, over the last ~10 s of turns: from the poller's return to
    // the end of the turn's events and completions (how long the last ready
    // event of a turn waited, plus its own handling). Zero with
    // Options::metrics off.
    LatencyHistogram::Summary lag;
    size_t timersArmed = 0;    // timers waiting now
    uint64_t timersFired = 0;  // timer callbacks run
    uint64_t functorsRun = 0;  // queued functors run
    // Times this loop's thread blocked until another loop ran something for
    // it (noteBlockingWait()): each stalled every connection of this loop.
    uint64_t blockingWaits = 0;
  };
  [[nodiscard]] Metrics metrics() const;
  // Counts a blocking wait on the calling thread's loop, if it runs one:
  // called by code about to block its thread until another loop has run
  // something for it (the library's: TcpServer::queuedOutput(wait), a
  // server's start() and destruction with I/O threads). Any thread; a
  // thread without a loop counts nothing.
  static void noteBlockingWait();
  // Number of eventfd writes so far (merged wake-ups are not counted).
  [[nodiscard]] uint64_t wakeupCount() const {
    return wakeupCount_.load(std::memory_order_relaxed);
  }

  // The loop of the calling thread, or nullptr.
  static EventLoop* currentThreadLoop();

  // The backend a loop asked for `kind` would try first (LIBNET_POLLER
  // applied, kAuto resolved by the io_uring probe and by earlier loops' ring
  // failures).
  [[nodiscard]] static PollerKind resolvePollerKind(PollerKind kind);
  // Why a loop asked for `kind` cannot run here ("io_uring unavailable: ..."
  // with the probe's reason), or "" if it can as far as the probe can tell.
  [[nodiscard]] static std::string unavailableReason(PollerKind kind);

 private:
  void handleWakeup();
  void doPendingFunctors();
  void drainPendingFunctors();
  void drainOperationsInFlight();
  // The poller's end of turn (Poller::beforeWait), before each wait.
  void flushBackend();
  // The turn's timings (Options::metrics): `dispatched` is when its events
  // and completions were handled.
  void recordTurn(Duration dispatched);

  const EventLoopOptions options_;
  std::atomic<bool> looping_{false};
  std::atomic<bool> quit_{false};
  bool dispatchingEvents_ = false;
  // Running queued functors (doPendingFunctors): what they queue in turn runs
  // in a second round right after, or, past that, makes the next poll return
  // at once; either way without writing the eventfd.
  bool runningFunctors_ = false;
  bool queuedByLoop_ = false;     // functors queued during the last round wait
  bool flushingBackend_ = false;  // in flushBackend(): queueing needs no wake-up
  int64_t iteration_ = 0;
  PollerKind pollerKind_;
  std::unique_ptr<TimerQueue> timerQueue_;
  UniqueFd wakeupFd_;
  std::unique_ptr<Channel> wakeupChannel_;
  std::vector<Channel*> activeChannels_;
  Timestamp lastHeapTrim_;  // BufferPool::trimHeap()

  std::atomic<bool> wakeupPending_{false};
  std::atomic<uint64_t> wakeupCount_{0};
  mutable Mutex mutex_;
  std::vector<Functor> pendingFunctors_ LIBNET_GUARDED_BY(mutex_);
  std::vector<Functor> functors_;      // the batch being run (loop thread)
  std::vector<Functor> destroyHooks_;  // runOnDestroy() (loop thread)

  // metrics(): written by the loop thread only.
  std::atomic<uint64_t> turns_{0};
  std::atomic<int64_t> busyNanos_{0};
  std::atomic<uint64_t> functorsRun_{0};
  std::atomic<uint64_t> blockingWaits_{0};
  LatencyHistogram lag_;
};

}  // namespace libnet
