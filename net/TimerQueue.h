// TimerQueue: the timers of one EventLoop, on one timerfd (CLOCK_MONOTONIC)
// armed for the earliest deadline. Owned by the EventLoop.
//
// addTimer() and cancel() may be called from any thread (they hop to the loop
// thread); everything else runs on the loop thread. cancel() also works from
// inside a timer callback, for the running timer itself (a repeating timer
// then stops) and for a timer due in the same batch that has not run yet (it
// then does not run).
#pragma once

#include <atomic>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "base/Timestamp.h"
#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/Channel.h"
#include "net/TimerId.h"

namespace libnet {

class EventLoopBase;

class TimerQueue {
 public:
  explicit TimerQueue(EventLoopBase* loop);  // throws std::system_error
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // interval > 0 makes the timer repeat every `interval` after each run.
  TimerId addTimer(TimerCallback cb, MonoTime when, Duration interval);
  void cancel(TimerId id);

  // Loop thread: the number of live timers.
  [[nodiscard]] size_t size() const { return timers_.size(); }
  // For EventLoop::metrics(), any thread: timers waiting now, callbacks run.
  [[nodiscard]] size_t armed() const { return armed_.load(std::memory_order_relaxed); }
  [[nodiscard]] uint64_t fired() const { return fired_.load(std::memory_order_relaxed); }

 private:
  struct Timer {
    TimerCallback callback;
    MonoTime when;
    Duration interval;
  };
  using Entry = std::pair<MonoTime, int64_t>;  // (deadline, sequence)

  void addTimerInLoop(int64_t sequence, Timer timer);
  void cancelInLoop(int64_t sequence);
  void handleRead();
  // Re-arms the timerfd for the earliest deadline (or disarms it).
  void rearm();

  EventLoopBase* loop_;
  UniqueFd timerfd_;
  Channel timerfdChannel_;
  std::atomic<int64_t> nextSequence_{1};
  std::map<int64_t, Timer> timers_;  // by sequence
  std::set<Entry> queue_;            // by deadline
  MonoTime armedFor_ = MonoTime::max();
  // The timer whose callback is running, and whether it cancelled itself.
  int64_t runningSequence_ = 0;
  bool runningCancelled_ = false;
  // Written by the loop only (after each change of timers_ / each callback).
  std::atomic<size_t> armed_{0};
  std::atomic<uint64_t> fired_{0};
};

}  // namespace libnet
