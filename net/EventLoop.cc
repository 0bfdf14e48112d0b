#include "net/EventLoop.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <system_error>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/Poller.h"
#include "net/TimerQueue.h"
#include "net/poller/PollerFactory.h"

namespace libnet {

namespace {

thread_local EventLoop* t_loopInThisThread = nullptr;

// Timers wake the loop through their timerfd, so this only bounds how long a
// loop with nothing to do sleeps between iterations.
constexpr Duration kPollTimeout = std::chrono::seconds(10);
constexpr Duration kTrimInterval = std::chrono::seconds(1);
constexpr int kMaxDrainRounds = 100;
// Rounds of queued functors per loop turn: the second runs what the first
// queued (a close queues the connection's destruction), so that a short
// connection's teardown takes no extra turn nor eventfd write. Bounded, so a
// functor that re-queues itself (a read yielding for fairness) lets the
// other ready channels have their turn.
constexpr int kFunctorRounds = 2;

// The clock that pollReturnTime_ is read from, in nanoseconds: a turn's
// timings start from that reading, so they take no clock read of their own
// at the start.
Duration clockNow() { return Timestamp::Clock::now().time_since_epoch(); }

// Read from other threads and written by the loop only: no read-modify-write.
template <class T>
void bump(std::atomic<T>& counter, T n) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

int createEventfd() {
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "eventfd");
  return fd;
}

}  // namespace

EventLoop* EventLoop::currentThreadLoop() { return t_loopInThisThread; }

EventLoop::EventLoop(PollerKind kind)
    : EventLoop(EventLoopOptions{.poller = kind, .ioUring = {}}) {}

EventLoop::EventLoop(const EventLoopOptions& options)
    : options_(options), wakeupFd_(createEventfd()) {
  if (t_loopInThisThread) {
    LOG_FATAL << "thread " << threadId_ << " already has an EventLoop (" << t_loopInThisThread
              << ")";
  }
  poller_ = newPoller(this, options_);
  pollerKind_ = poller_->kind();
  timerQueue_ = std::make_unique<TimerQueue>(this);
  wakeupChannel_ = std::make_unique<Channel>(this, wakeupFd_.get());
  wakeupChannel_->setReadCallback([this](Timestamp) { handleWakeup(); });
  wakeupChannel_->enableReading();
  t_loopInThisThread = this;
  LOG_DEBUG << "EventLoop " << this << " created on thread " << threadId_ << " ("
            << pollerKindName(pollerKind_) << ")";
}

EventLoop::~EventLoop() {
  // Work queued after loop() returned (or for a loop never run), such as a
  // connection closed by its owner's destructor, still runs while the poller
  // exists, so nothing it owns dies registered.
  drainPendingFunctors();
  if (!destroyHooks_.empty()) {
    std::vector<Functor> hooks;
    hooks.swap(destroyHooks_);
    for (Functor& hook : hooks) (void)callGuarded("destroy hook", hook);
    drainPendingFunctors();
  }
  drainOperationsInFlight();
  wakeupChannel_->disableAll();
  wakeupChannel_->remove();
  wakeupChannel_.reset();
  timerQueue_.reset();
  poller_.reset();
  t_loopInThisThread = nullptr;
}

void EventLoop::loop() {
  assertInLoopThread();
  if (looping_.exchange(true)) LOG_FATAL << "EventLoop::loop() called re-entrantly";
  LOG_TRACE << "EventLoop " << this << " start looping";
  while (!quit_.load(std::memory_order_acquire)) {
    activeChannels_.clear();
    flushBackend();
    // Buffers freed in bulk go back to the system soon, also on a loop that
    // has gone quiet since.
    const bool trimDue = bufferPool_->trimDue();
    // A quit() from the backend's end of turn (a callback run there: an
    // io_uring datagram socket's receive by readiness) must not wait out the
    // poll either.
    const Duration timeout = queuedByLoop_ || quit_.load(std::memory_order_acquire)
                                 ? Duration::zero()
                                 : (trimDue ? kTrimInterval : kPollTimeout);
    pollReturnTime_ = poller_->poll(timeout, &activeChannels_);
    if (trimDue && pollReturnTime_ - lastHeapTrim_ >= kTrimInterval) {
      lastHeapTrim_ = pollReturnTime_;
      bufferPool_->trimHeap();
    }
    ++iteration_;
    dispatchingEvents_ = true;
    for (Channel* channel : activeChannels_) {
      (void)callGuarded("event handler", [&] { channel->handleEvent(pollReturnTime_); });
    }
    poller_->dispatchCompletions();
    dispatchingEvents_ = false;
    activeChannels_.clear();
    const Duration dispatched = options_.metrics ? clockNow() : Duration::zero();
    doPendingFunctors();
    if (options_.metrics) recordTurn(dispatched);
    bump(turns_, uint64_t{1});
  }
  // Work queued just before quit() (e.g. tearing down connections) still runs,
  // and so does the work it queues in turn (close -> destroy), so nothing it
  // owns outlives the loop unreleased. Bounded, in case a functor re-queues
  // itself forever.
  drainPendingFunctors();
  quit_.store(false, std::memory_order_relaxed);
  looping_.store(false);
}

void EventLoop::recordTurn(Duration dispatched) {
  const Duration start = pollReturnTime_.sinceEpoch();
  const Duration end = clockNow();
  // A wall-clock step back makes a turn look negative: counted as nothing.
  bump(busyNanos_, std::max<int64_t>(0, (end - start).count()));
  lag_.record(dispatched - start, end);
}

EventLoop::Metrics EventLoop::metrics() const {
  return Metrics{.turns = turns_.load(std::memory_order_relaxed),
                 .busy = Duration(busyNanos_.load(std::memory_order_relaxed)),
                 .lag = lag_.summary(clockNow()),
                 .timersArmed = timerQueue_->armed(),
                 .timersFired = timerQueue_->fired(),
                 .functorsRun = functorsRun_.load(std::memory_order_relaxed),
                 .blockingWaits = blockingWaits_.load(std::memory_order_relaxed)};
}

void EventLoop::noteBlockingWait() {
  // Written by the loop's own thread only: a relaxed load and store.
  if (EventLoop* loop = t_loopInThisThread) {
    loop->blockingWaits_.store(loop->blockingWaits_.load(std::memory_order_relaxed) + 1,
                               std::memory_order_relaxed);
  }
}

void EventLoop::runOnDestroy(Functor cb) {
  assertInLoopThread();
  destroyHooks_.push_back(std::move(cb));
}

void EventLoop::quit() {
  quit_.store(true, std::memory_order_release);
  if (!isInLoopThread()) wakeup();
}

void EventLoop::queueInLoop(Functor cb) {
  {
    MutexLock lock(mutex_);
    pendingFunctors_.push_back(std::move(cb));
  }
  // The loop thread itself needs no wake-up while dispatching events or
  // running functors: pending functors run at the end of this iteration, or
  // the next poll does not wait (queuedByLoop_). Anywhere else (another
  // thread, before loop() started) the loop may be about to sleep in poll,
  // so wake it.
  if (!isInLoopThread()) {
    wakeup();
  } else if (runningFunctors_ || flushingBackend_) {
    queuedByLoop_ = true;
  } else if (!dispatchingEvents_) {
    wakeup();
  }
}

size_t EventLoop::queueSize() const {
  MutexLock lock(mutex_);
  return pendingFunctors_.size();
}

TimerId EventLoop::runAt(MonoTime when, TimerCallback cb) {
  return timerQueue_->addTimer(std::move(cb), when, Duration::zero());
}

TimerId EventLoop::runAfter(Duration delay, TimerCallback cb) {
  return runAt(MonoClock::now() + delay, std::move(cb));
}

TimerId EventLoop::runEvery(Duration interval, TimerCallback cb) {
  return timerQueue_->addTimer(std::move(cb), MonoClock::now() + interval, interval);
}

void EventLoop::cancel(TimerId timerId) { timerQueue_->cancel(timerId); }

PollerKind EventLoop::resolvePollerKind(PollerKind kind) { return resolvePoller(kind); }

std::string EventLoop::unavailableReason(PollerKind kind) { return pollerUnavailableReason(kind); }

void EventLoop::wakeup() {
  // Merge: if a wake-up is already on its way, the loop will see our functor.
  if (wakeupPending_.exchange(true, std::memory_order_acq_rel)) return;
  wakeupCount_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t one = 1;
  if (::write(wakeupFd_.get(), &one, sizeof one) != sizeof one) {
    LOG_SYSERR << "EventLoop::wakeup write";
  }
}

void EventLoop::handleWakeup() {
  uint64_t value = 0;
  while (::read(wakeupFd_.get(), &value, sizeof value) > 0) {
  }
}

void EventLoop::drainOperationsInFlight() {
  // Connections closed during shutdown may have operations in flight (on
  // io_uring: their cancels and the closes of their fds are queued, not yet
  // submitted, and each strategy stays registered until its last completion
  // arrives), which needs a few more turns of the poller.
  // Bounded: a connection its owner never closed would stay forever.
  const auto deadline = MonoClock::now() + std::chrono::seconds(2);
  while (poller_->ownersInFlight() > 0 && MonoClock::now() < deadline) {
    activeChannels_.clear();
    flushBackend();
    pollReturnTime_ = poller_->poll(std::chrono::milliseconds(10), &activeChannels_);
    activeChannels_.clear();  // readiness is of no interest any more
    dispatchingEvents_ = true;
    poller_->dispatchCompletions();
    dispatchingEvents_ = false;
    drainPendingFunctors();
  }
  if (poller_->ownersInFlight() > 0) {
    LOG_WARN << "EventLoop " << this << " destroyed with " << poller_->ownersInFlight()
             << " I/O owners still registered with its poller";
  }
}

void EventLoop::flushBackend() {
  // Functors queued from here run after the coming poll, which then does
  // not wait (queuedByLoop_), as for those queued by functors.
  flushingBackend_ = true;
  (void)callGuarded("backend's end of turn", [&] { poller_->beforeWait(); });
  flushingBackend_ = false;
}

void EventLoop::drainPendingFunctors() {
  for (int round = 0; round < kMaxDrainRounds && queueSize() > 0; ++round) doPendingFunctors();
  if (queueSize() > 0) LOG_ERROR << "EventLoop " << this << " stopped with work still queued";
}

void EventLoop::doPendingFunctors() {
  if (runningFunctors_) return;  // not re-entrant: functors_ is being run
  for (int round = 0; round < kFunctorRounds; ++round) {
    // Cleared before taking the batch: a producer that queues after the swap
    // below sees no pending wake-up and writes the eventfd itself.
    wakeupPending_.store(false, std::memory_order_release);
    queuedByLoop_ = false;
    {
      MutexLock lock(mutex_);
      functors_.swap(pendingFunctors_);
    }
    if (functors_.empty()) return;
    runningFunctors_ = true;
    bump(functorsRun_, static_cast<uint64_t>(functors_.size()));
    for (Functor& functor : functors_) (void)callGuarded("queued functor", functor);
    runningFunctors_ = false;
    functors_.clear();  // keeps its capacity: no allocation per turn
  }
}

}  // namespace libnet
