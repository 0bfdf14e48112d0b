#include "net/TimerQueue.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <system_error>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/EventLoopBase.h"

namespace libnet {

namespace {

int createTimerfd() {
  const int fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "timerfd_create");
  return fd;
}

}  // namespace

TimerQueue::TimerQueue(EventLoopBase* loop)
    : loop_(loop), timerfd_(createTimerfd()), timerfdChannel_(loop, timerfd_.get()) {
  timerfdChannel_.setReadCallback([this](Timestamp) { handleRead(); });
  timerfdChannel_.enableReading();
}

TimerQueue::~TimerQueue() {
  timerfdChannel_.disableAll();
  timerfdChannel_.remove();
}

TimerId TimerQueue::addTimer(TimerCallback cb, MonoTime when, Duration interval) {
  const int64_t sequence = nextSequence_.fetch_add(1, std::memory_order_relaxed);
  Timer timer{std::move(cb), when, interval};
  if (loop_->isInLoopThread()) {
    addTimerInLoop(sequence, std::move(timer));
  } else {
    loop_->queueInLoop([this, sequence, timer = std::move(timer)]() mutable {
      addTimerInLoop(sequence, std::move(timer));
    });
  }
  return TimerId(sequence);
}

void TimerQueue::cancel(TimerId id) {
  if (!id.valid()) return;
  loop_->runInLoop([this, sequence = id.sequence()] { cancelInLoop(sequence); });
}

void TimerQueue::addTimerInLoop(int64_t sequence, Timer timer) {
  loop_->assertInLoopThread();
  queue_.emplace(timer.when, sequence);
  timers_.emplace(sequence, std::move(timer));
  armed_.store(timers_.size(), std::memory_order_relaxed);
  rearm();
}

void TimerQueue::cancelInLoop(int64_t sequence) {
  loop_->assertInLoopThread();
  if (sequence == runningSequence_) {
    // Its callback is on the stack right now; erase it when it returns.
    runningCancelled_ = true;
    return;
  }
  auto it = timers_.find(sequence);
  if (it == timers_.end()) return;
  queue_.erase(Entry(it->second.when, sequence));
  timers_.erase(it);
  armed_.store(timers_.size(), std::memory_order_relaxed);
  // A removed head only makes the timerfd fire early; handleRead re-arms then.
}

void TimerQueue::handleRead() {
  loop_->assertInLoopThread();
  uint64_t expirations = 0;
  // Level of the timerfd does not matter: it is drained here and re-armed below.
  while (::read(timerfd_.get(), &expirations, sizeof expirations) > 0) {
  }
  armedFor_ = MonoTime::max();

  const MonoTime now = MonoClock::now();
  std::vector<int64_t> due;
  while (!queue_.empty() && queue_.begin()->first <= now) {
    due.push_back(queue_.begin()->second);
    queue_.erase(queue_.begin());
  }

  for (const int64_t sequence : due) {
    auto it = timers_.find(sequence);
    if (it == timers_.end()) continue;  // cancelled by an earlier callback of this batch
    runningSequence_ = sequence;
    runningCancelled_ = false;
    // The callback may add timers (rehashing nothing: std::map nodes are
    // stable) or cancel this one (deferred above), so `it` stays valid.
    // A throwing callback must not take the rest of the batch (and the
    // re-arming below) with it.
    (void)callGuarded("timer callback", it->second.callback);
    fired_.store(fired_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    runningSequence_ = 0;
    Timer& timer = it->second;
    if (timer.interval > Duration::zero() && !runningCancelled_) {
      timer.when = now + timer.interval;
      queue_.emplace(timer.when, sequence);
    } else {
      timers_.erase(it);
    }
  }
  armed_.store(timers_.size(), std::memory_order_relaxed);
  rearm();
}

void TimerQueue::rearm() {
  if (queue_.empty()) {
    if (armedFor_ != MonoTime::max()) {
      struct itimerspec off {};
      ::timerfd_settime(timerfd_.get(), 0, &off, nullptr);
      armedFor_ = MonoTime::max();
    }
    return;
  }
  const MonoTime earliest = queue_.begin()->first;
  if (earliest == armedFor_) return;
  // Absolute CLOCK_MONOTONIC time: steady_clock is CLOCK_MONOTONIC on Linux.
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(earliest.time_since_epoch()).count();
  struct itimerspec spec {};
  // A deadline already past (or zero) must still fire: use the smallest value.
  const int64_t when = ns > 0 ? ns : 1;
  spec.it_value.tv_sec = static_cast<time_t>(when / 1000000000);
  spec.it_value.tv_nsec = static_cast<long>(when % 1000000000);
  if (::timerfd_settime(timerfd_.get(), TFD_TIMER_ABSTIME, &spec, nullptr) < 0) {
    LOG_SYSERR << "timerfd_settime";
  }
  armedFor_ = earliest;
}

}  // namespace libnet
