// Timers through the EventLoop API (runAt/runAfter/runEvery/cancel), which is
// how TimerQueue is used. Every test bounds its wait: loops on the test
// thread carry a watchdog timer, waits on other threads use waitFor().
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/CountDownLatch.h"
#include "base/Timestamp.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/PollerKind.h"
#include "net/TimerId.h"
#include "net/TimerQueue.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 10s;

class TimerQueueTest : public test::LoopTest {};

TEST_P(TimerQueueTest, LoopUsesRequestedBackend) {
  EventLoop loop(GetParam());
  if (GetParam() != PollerKind::kAuto) {
    EXPECT_EQ(loop.pollerKind(), GetParam());
  }
}

TEST_P(TimerQueueTest, FiresInDeadlineOrderRegardlessOfInsertionOrder) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  const std::vector<int> offsetsMs = {30, 10, 50, 0, 20, 45, 5, 15, 40, 35, 25, 1};
  const MonoTime base = MonoClock::now() + 5ms;
  std::vector<int> fired;
  int tooEarly = 0;
  for (int offset : offsetsMs) {
    const MonoTime when = base + std::chrono::milliseconds(offset);
    loop.runAt(when, [&, offset, when] {
      if (MonoClock::now() < when) ++tooEarly;
      fired.push_back(offset);
      if (fired.size() == offsetsMs.size()) loop.quit();
    });
  }
  loop.loop();
  ASSERT_FALSE(timedOut_);
  std::vector<int> expected = offsetsMs;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(fired, expected);
  EXPECT_EQ(tooEarly, 0);
}

TEST_P(TimerQueueTest, RunAfterWaitsAtLeastTheDelay) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  const MonoTime start = MonoClock::now();
  MonoTime firedAt{};
  loop.runAfter(20ms, [&] {
    firedAt = MonoClock::now();
    loop.quit();
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_GE(firedAt - start, 20ms);
}

TEST_P(TimerQueueTest, RunEveryRepeatsUntilCancelled) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  constexpr int kRuns = 5;
  constexpr auto kInterval = 2ms;
  int runs = 0;
  int runsAtCheck = -1;
  const MonoTime start = MonoClock::now();
  MonoTime lastRun{};
  TimerId every;
  every = loop.runEvery(kInterval, [&] {
    lastRun = MonoClock::now();
    if (++runs == kRuns) {
      // Cancel from outside the timer's own callback, after this batch.
      loop.queueInLoop([&] {
        loop.cancel(every);
        // A surviving repeat would be due one interval after its last run,
        // long before this check.
        loop.runAfter(30ms, [&] {
          runsAtCheck = runs;
          loop.quit();
        });
      });
    }
  });
  EXPECT_TRUE(every.valid());
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(runsAtCheck, kRuns);
  // Each run is due one interval after the previous one was handled.
  EXPECT_GE(lastRun - start, kRuns * kInterval);
}

TEST_P(TimerQueueTest, CancelBeforeFiringNeverRuns) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  bool cancelledRan = false;
  bool keptRan = false;
  bool checked = false;
  const TimerId doomed = loop.runAfter(5ms, [&] { cancelledRan = true; });
  loop.runAfter(5ms, [&] { keptRan = true; });
  loop.cancel(doomed);
  loop.cancel(doomed);     // twice is harmless
  loop.cancel(TimerId());  // so is an invalid id
  // Later than the cancelled deadline: by the time this runs, the cancelled
  // timer would have run.
  loop.runAfter(30ms, [&] {
    checked = true;
    loop.quit();
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_TRUE(checked);
  EXPECT_TRUE(keptRan);
  EXPECT_FALSE(cancelledRan);
}

TEST_P(TimerQueueTest, CancelAfterFiringIsHarmless) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  int runs = 0;
  TimerId once;
  once = loop.runAfter(1ms, [&] {
    ++runs;
    loop.queueInLoop([&] {
      loop.cancel(once);
      loop.runAfter(5ms, [&] { loop.quit(); });
    });
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(runs, 1);
}

TEST_P(TimerQueueTest, RepeatingTimerCancelsItselfFromItsCallback) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  constexpr int kRuns = 3;
  int runs = 0;
  int runsAtCheck = -1;
  TimerId self;
  self = loop.runEvery(1ms, [&] {
    if (++runs == kRuns) {
      loop.cancel(self);
      // Were the cancel ignored, the next run (1 ms away) would come first.
      loop.runAfter(30ms, [&] {
        runsAtCheck = runs;
        loop.quit();
      });
    }
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(runsAtCheck, kRuns);
}

TEST_P(TimerQueueTest, OneShotTimerCancellingItselfIsHarmless) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  int runs = 0;
  TimerId self;
  self = loop.runAfter(1ms, [&] {
    ++runs;
    loop.cancel(self);
    loop.runAfter(10ms, [&] { loop.quit(); });
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(runs, 1);
}

// A and B share one deadline that has already passed when the loop first
// polls, so they are handled in one batch; A runs first and cancels B.
TEST_P(TimerQueueTest, CancelOfTimerDueInSameBatchWithSameDeadline) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  const MonoTime when = MonoClock::now();
  int64_t iterationA = -1;
  int64_t iterationC = -2;
  bool ranB = false;
  TimerId b;
  loop.runAt(when, [&] {
    iterationA = loop.iteration();
    loop.cancel(b);
  });
  b = loop.runAt(when, [&] { ranB = true; });
  // Same deadline, added after B: in B's batch, after B's turn.
  loop.runAt(when, [&] {
    iterationC = loop.iteration();
    loop.quit();
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(iterationA, iterationC) << "the timers were not handled in one batch";
  EXPECT_FALSE(ranB);
}

// Two deadlines 1 ms apart, both passed before the loop starts: the test
// thread waits for the later deadline before entering loop(), which makes
// them due together (it synchronises nothing).
TEST_P(TimerQueueTest, CancelOfTimerDueInSameBatchWithLaterDeadline) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  const MonoTime first = MonoClock::now() + 1ms;
  const MonoTime second = first + 1ms;
  int64_t iterationA = -1;
  int64_t iterationC = -2;
  bool ranB = false;
  TimerId b;
  loop.runAt(first, [&] {
    iterationA = loop.iteration();
    loop.cancel(b);
  });
  b = loop.runEvery(1ms, [&] { ranB = true; });  // first due at about `second`
  loop.runAt(second + 1ms, [&] {
    iterationC = loop.iteration();
    loop.quit();
  });
  while (MonoClock::now() < second + 2ms) std::this_thread::yield();
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(iterationA, iterationC) << "the timers were not handled in one batch";
  EXPECT_FALSE(ranB);
}

TEST_P(TimerQueueTest, TenThousandRandomTimersFireInOrder) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  constexpr int kTimers = 10000;
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> delayUs(0, 100000);
  const MonoTime base = MonoClock::now();
  std::vector<MonoTime> firedDeadlines;
  firedDeadlines.reserve(kTimers);
  int tooEarly = 0;
  for (int i = 0; i < kTimers; ++i) {
    const MonoTime when = base + std::chrono::microseconds(delayUs(rng));
    loop.runAt(when, [&, when] {
      if (MonoClock::now() < when) ++tooEarly;
      firedDeadlines.push_back(when);
      if (firedDeadlines.size() == kTimers) loop.quit();
    });
  }
  loop.loop();
  ASSERT_FALSE(timedOut_) << firedDeadlines.size() << " of " << kTimers << " fired";
  EXPECT_EQ(firedDeadlines.size(), static_cast<size_t>(kTimers));
  EXPECT_EQ(tooEarly, 0);
  EXPECT_TRUE(std::is_sorted(firedDeadlines.begin(), firedDeadlines.end()));
}

TEST_P(TimerQueueTest, TimerAddedFromCallbackFires) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  int depth = 0;
  std::function<void()> chain = [&] {
    if (++depth == 10) {
      loop.quit();
    } else {
      loop.runAfter(0ms, chain);
    }
  };
  loop.runAfter(0ms, chain);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(depth, 10);
}

// State shared between the test thread and a loop thread; guarded by mutex.
struct CrossThreadRecord {
  std::mutex mutex;
  std::set<int> fired;
  int tooEarly = 0;
};

TEST_P(TimerQueueTest, AddAndCancelFromAnotherThread) {
  CrossThreadRecord record;
  CountDownLatch blocked(1);
  CountDownLatch release(1);
  CountDownLatch done(1);
  bool releasedInTime = false;
  EventLoopThread thread({}, "timers", GetParam());
  EventLoop* loop = thread.startLoop();
  ASSERT_NE(loop, nullptr);
  ASSERT_FALSE(loop->isInLoopThread());

  // Hold the loop in a functor so every add and cancel below is queued, in
  // order, before any of these timers can be considered for firing.
  loop->queueInLoop([&] {
    blocked.countDown();
    releasedInTime = release.waitFor(kWait);
  });
  ASSERT_TRUE(blocked.waitFor(kWait));

  constexpr int kTimers = 200;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> delayMs(0, 20);
  std::set<int> kept;
  for (int i = 0; i < kTimers; ++i) {
    const MonoTime when = MonoClock::now() + std::chrono::milliseconds(delayMs(rng));
    const TimerId id = loop->runAt(when, [&record, i, when] {
      std::lock_guard lock(record.mutex);
      if (MonoClock::now() < when) ++record.tooEarly;
      record.fired.insert(i);
    });
    EXPECT_TRUE(id.valid());
    if (i % 3 == 0) {
      loop->cancel(id);
    } else {
      kept.insert(i);
    }
  }
  // Later than every deadline above.
  loop->runAfter(60ms, [&] { done.countDown(); });
  release.countDown();

  ASSERT_TRUE(done.waitFor(kWait));
  std::lock_guard lock(record.mutex);
  EXPECT_TRUE(releasedInTime);
  EXPECT_EQ(record.fired, kept);
  EXPECT_EQ(record.tooEarly, 0);
}

TEST_P(TimerQueueTest, ConcurrentAddsFromSeveralThreads) {
  constexpr int kThreads = 3;
  constexpr int kPerThread = 300;
  std::atomic<int> fired{0};
  std::atomic<int> tooEarly{0};
  CountDownLatch allFired(kThreads * kPerThread);
  EventLoopThread thread({}, "timers", GetParam());
  EventLoop* loop = thread.startLoop();
  std::vector<std::thread> adders;
  for (int t = 0; t < kThreads; ++t) {
    adders.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::uniform_int_distribution<int> delayUs(0, 5000);
      for (int i = 0; i < kPerThread; ++i) {
        const MonoTime when = MonoClock::now() + std::chrono::microseconds(delayUs(rng));
        loop->runAt(when, [&, when] {
          if (MonoClock::now() < when) tooEarly.fetch_add(1);
          fired.fetch_add(1);
          allFired.countDown();
        });
      }
    });
  }
  for (auto& adder : adders) adder.join();
  EXPECT_TRUE(allFired.waitFor(kWait)) << fired.load() << " fired";
  EXPECT_EQ(fired.load(), kThreads * kPerThread);
  EXPECT_EQ(tooEarly.load(), 0);
}

TEST_P(TimerQueueTest, CancelRepeatingTimerFromAnotherThread) {
  std::mutex mutex;
  int runs = 0;           // guarded by mutex
  int runsAtCancel = -1;  // guarded by mutex
  int runsAtCheck = -2;   // guarded by mutex
  CountDownLatch ranThrice(3);
  CountDownLatch checked(1);
  EventLoopThread thread({}, "timers", GetParam());
  EventLoop* loop = thread.startLoop();

  const TimerId every = loop->runEvery(1ms, [&] {
    {
      std::lock_guard lock(mutex);
      ++runs;
    }
    ranThrice.countDown();
  });
  ASSERT_TRUE(ranThrice.waitFor(kWait));
  loop->cancel(every);
  // Queued after the cancel from this same thread, so it runs after it.
  loop->runInLoop([&] {
    {
      std::lock_guard lock(mutex);
      runsAtCancel = runs;
    }
    loop->runAfter(30ms, [&] {
      {
        std::lock_guard lock(mutex);
        runsAtCheck = runs;
      }
      checked.countDown();
    });
  });
  ASSERT_TRUE(checked.waitFor(kWait));
  std::lock_guard lock(mutex);
  EXPECT_GE(runsAtCancel, 3);
  EXPECT_EQ(runsAtCheck, runsAtCancel);
}

std::string pollerName(const ::testing::TestParamInfo<PollerKind>& info) {
  return std::string(pollerKindName(info.param));
}

INSTANTIATE_TEST_SUITE_P(Pollers, TimerQueueTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet
