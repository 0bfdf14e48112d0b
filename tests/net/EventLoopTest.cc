// EventLoop, EventLoopThread and EventLoopThreadPool. Every wait is bounded:
// loops on the test thread carry a watchdog timer, waits for other threads
// use CountDownLatch::waitFor or future::wait_for.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/CountDownLatch.h"
#include "base/CurrentThread.h"
#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/Channel.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/EventLoopThreadPool.h"
#include "net/PollerKind.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;

constexpr auto kWait = 10s;

class EventLoopTest : public test::LoopTest {};

class EventLoopDeathTest : public EventLoopTest {
 protected:
  void SetUp() override {
    EventLoopTest::SetUp();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST_P(EventLoopTest, ConstructionBindsToThisThread) {
  EXPECT_EQ(EventLoop::currentThreadLoop(), nullptr);
  {
    EventLoop loop(GetParam());
    EXPECT_EQ(EventLoop::currentThreadLoop(), &loop);
    EXPECT_TRUE(loop.isInLoopThread());
    EXPECT_EQ(loop.threadId(), CurrentThread::tid());
    if (GetParam() != PollerKind::kAuto) {
      EXPECT_EQ(loop.pollerKind(), GetParam());
    }
    loop.assertInLoopThread();  // does not abort
  }
  EXPECT_EQ(EventLoop::currentThreadLoop(), nullptr);
  // Once the first is gone, a thread may make another.
  EventLoop again(GetParam());
  EXPECT_EQ(EventLoop::currentThreadLoop(), &again);
}

TEST_P(EventLoopTest, RunInLoopFromAnotherThreadRunsOnLoopThread) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  const pid_t loopTid = CurrentThread::tid();
  const std::thread::id loopThreadId = std::this_thread::get_id();
  std::atomic<pid_t> callerTid{0};
  bool inLoopThread = false;
  pid_t ranOnTid = 0;
  std::thread::id ranOnThreadId;
  std::thread caller([&] {
    callerTid = CurrentThread::tid();
    loop.runInLoop([&] {
      inLoopThread = loop.isInLoopThread();
      ranOnTid = CurrentThread::tid();
      ranOnThreadId = std::this_thread::get_id();
      loop.quit();
    });
  });
  loop.loop();
  caller.join();
  ASSERT_FALSE(timedOut_);
  EXPECT_TRUE(inLoopThread);
  EXPECT_EQ(ranOnTid, loopTid);
  EXPECT_EQ(ranOnThreadId, loopThreadId);
  EXPECT_NE(ranOnTid, callerTid.load());
}

TEST_P(EventLoopTest, RunInLoopOnLoopThreadRunsImmediately) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  std::vector<std::string> order;
  loop.queueInLoop([&] {
    order.push_back("outer start");
    loop.runInLoop([&] { order.push_back("inner"); });
    loop.queueInLoop([&] {
      order.push_back("queued");
      loop.quit();
    });
    order.push_back("outer end");
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(order, (std::vector<std::string>{"outer start", "inner", "outer end", "queued"}));
}

TEST_P(EventLoopTest, FunctorsFromOneThreadRunInOrder) {
  constexpr int kFunctors = 1000;
  std::vector<int> ran;  // written on the loop thread only
  CountDownLatch done(1);
  bool allOnLoopThread = true;
  EventLoopThread thread({}, "order", GetParam());
  EventLoop* loop = thread.startLoop();
  std::thread producer([&] {
    for (int i = 0; i < kFunctors; ++i) {
      // Alternate the two entry points: both queue from a foreign thread.
      auto functor = [&, i] {
        allOnLoopThread = allOnLoopThread && loop->isInLoopThread();
        ran.push_back(i);
        if (i == kFunctors - 1) done.countDown();
      };
      if (i % 2 == 0) {
        loop->queueInLoop(functor);
      } else {
        loop->runInLoop(functor);
      }
    }
  });
  producer.join();
  ASSERT_TRUE(done.waitFor(kWait));
  std::vector<int> expected(kFunctors);
  for (int i = 0; i < kFunctors; ++i) expected[i] = i;
  EXPECT_EQ(ran, expected);
  EXPECT_TRUE(allOnLoopThread);
}

TEST_P(EventLoopTest, QuitFromAnotherThreadReturnsFromLoop) {
  std::promise<EventLoop*> created;
  std::future<EventLoop*> loopFuture = created.get_future();
  CountDownLatch mayExit(1);
  std::promise<void> returned;
  std::future<void> returnedFuture = returned.get_future();
  std::thread loopThread([&] {
    EventLoop loop(GetParam());
    // Only a backstop so that a lost wake-up cannot hang the test: the
    // assertion below waits for half as long.
    loop.runAfter(kWait, [&] { loop.quit(); });
    created.set_value(&loop);
    loop.loop();
    returned.set_value();
    // Keep the loop alive until the test thread is done with its pointer.
    (void)mayExit.waitFor(kWait);
  });
  ASSERT_EQ(loopFuture.wait_for(kWait), std::future_status::ready);
  EventLoop* loop = loopFuture.get();
  // Wait until the loop is running and has gone back to sleep in poll.
  CountDownLatch running(1);
  loop->queueInLoop([&] { running.countDown(); });
  ASSERT_TRUE(running.waitFor(kWait));
  EXPECT_FALSE(loop->isInLoopThread());

  loop->quit();
  EXPECT_EQ(returnedFuture.wait_for(kWait / 2), std::future_status::ready);
  mayExit.countDown();
  loopThread.join();
}

TEST_P(EventLoopTest, QuitFromInsideAFunctor) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  int ran = 0;
  loop.queueInLoop([&] {
    ++ran;
    loop.quit();
  });
  loop.loop();
  EXPECT_FALSE(timedOut_);
  EXPECT_EQ(ran, 1);
  // The loop can run again after quitting.
  armWatchdog(loop);
  loop.queueInLoop([&] {
    ++ran;
    loop.quit();
  });
  loop.loop();
  EXPECT_FALSE(timedOut_);
  EXPECT_EQ(ran, 2);
}

// While the loop is busy in a functor, a burst of queueInLoop() calls from
// another thread writes the eventfd once; the rest merge into that wake-up.
TEST_P(EventLoopTest, WakeupsAreMergedWhileLoopIsBusy) {
  constexpr int kFunctors = 1000;
  CountDownLatch blocked(1);
  CountDownLatch release(1);
  CountDownLatch done(1);
  std::atomic<int> ran{0};
  std::atomic<bool> releasedInTime{false};
  EventLoopThread thread({}, "wakeups", GetParam());
  EventLoop* loop = thread.startLoop();

  loop->queueInLoop([&] {
    blocked.countDown();
    releasedInTime = release.waitFor(kWait);
  });
  ASSERT_TRUE(blocked.waitFor(kWait));
  const uint64_t before = loop->wakeupCount();
  for (int i = 0; i < kFunctors; ++i) {
    loop->queueInLoop([&, i] {
      ran.fetch_add(1);
      if (i == kFunctors - 1) done.countDown();
    });
  }
  EXPECT_GE(loop->queueSize(), static_cast<size_t>(kFunctors));
  release.countDown();
  ASSERT_TRUE(done.waitFor(kWait));
  const uint64_t after = loop->wakeupCount();
  EXPECT_TRUE(releasedInTime.load());
  EXPECT_EQ(ran.load(), kFunctors);
  EXPECT_GE(after - before, 1u);  // the first queued functor did wake it
  EXPECT_LE(after - before, 2u);
}

TEST_P(EventLoopTest, ExceptionInFunctorDoesNotEscapeLoop) {
  std::vector<std::string> logged;
  Logger::setOutput([&logged](std::string_view line) { logged.emplace_back(line); });
  EventLoop loop(GetParam());
  armWatchdog(loop);
  std::vector<int> ran;
  loop.queueInLoop([&] {
    ran.push_back(1);
    throw std::runtime_error("functor failure");
  });
  loop.queueInLoop([&] {
    ran.push_back(2);
    throw 42;  // not a std::exception
  });
  loop.queueInLoop([&] {
    ran.push_back(3);
    loop.quit();
  });
  EXPECT_NO_THROW(loop.loop());
  Logger::setOutput({});
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));
  bool loggedMessage = false;
  for (const auto& line : logged) {
    if (line.find("functor failure") != std::string::npos) loggedMessage = true;
  }
  EXPECT_TRUE(loggedMessage);
  EXPECT_GE(logged.size(), 2u);
}

TEST_P(EventLoopTest, EventLoopThreadRunsInitCallbackOnItsThread) {
  pid_t initTid = 0;
  EventLoop* initLoop = nullptr;
  EventLoopThread thread(
      [&](EventLoop* loop) {
        initTid = CurrentThread::tid();
        initLoop = loop;
      },
      "init", GetParam());
  EventLoop* loop = thread.startLoop();
  // startLoop() returns after the callback, under the thread's mutex.
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(initLoop, loop);
  EXPECT_EQ(initTid, loop->threadId());
  EXPECT_NE(initTid, CurrentThread::tid());
  EXPECT_FALSE(loop->isInLoopThread());
  if (GetParam() != PollerKind::kAuto) {
    EXPECT_EQ(loop->pollerKind(), GetParam());
  }
}

TEST_P(EventLoopTest, EventLoopThreadPoolRoundRobin) {
  EventLoop base(GetParam());
  std::mutex mutex;
  std::set<pid_t> initTids;  // guarded by mutex
  EventLoopThreadPool pool(&base, "pool", 3);
  pool.start([&](EventLoop* loop) {
    std::lock_guard lock(mutex);
    initTids.insert(CurrentThread::tid());
    EXPECT_TRUE(loop->isInLoopThread());
  });
  ASSERT_TRUE(pool.started());
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(initTids.size(), 3u);
  }

  std::vector<EventLoop*> picked;
  for (int i = 0; i < 7; ++i) picked.push_back(pool.nextLoop());
  const std::set<EventLoop*> distinct(picked.begin(), picked.begin() + 3);
  EXPECT_EQ(distinct.size(), 3u);
  EXPECT_EQ(distinct.count(&base), 0u);
  EXPECT_EQ(picked[3], picked[0]);
  EXPECT_EQ(picked[4], picked[1]);
  EXPECT_EQ(picked[5], picked[2]);
  EXPECT_EQ(picked[6], picked[0]);
  EXPECT_EQ(pool.allLoops(), (std::vector<EventLoop*>{picked[0], picked[1], picked[2]}));

  CountDownLatch checked(3);
  std::vector<pid_t> ranOn(3, 0);
  std::vector<char> inLoop(3, 0);
  for (int i = 0; i < 3; ++i) {
    EventLoop* loop = picked[i];
    EXPECT_FALSE(loop->isInLoopThread());
    EXPECT_EQ(loop->pollerKind(), base.pollerKind());
    loop->runInLoop([&, i, loop] {
      inLoop[i] = loop->isInLoopThread();
      ranOn[i] = CurrentThread::tid();
      checked.countDown();
    });
  }
  ASSERT_TRUE(checked.waitFor(kWait));
  std::lock_guard lock(mutex);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(inLoop[i]) << i;
    EXPECT_EQ(ranOn[i], picked[i]->threadId()) << i;
    EXPECT_NE(ranOn[i], CurrentThread::tid()) << i;
    EXPECT_EQ(initTids.count(ranOn[i]), 1u) << i;
  }
  EXPECT_EQ(std::set<pid_t>(ranOn.begin(), ranOn.end()).size(), 3u);
}

TEST_P(EventLoopTest, EventLoopThreadPoolWithoutThreadsUsesBaseLoop) {
  EventLoop base(GetParam());
  EventLoop* initLoop = nullptr;
  EventLoopThreadPool pool(&base, "empty", 0);
  pool.start([&](EventLoop* loop) { initLoop = loop; });
  EXPECT_EQ(initLoop, &base);
  EXPECT_EQ(pool.nextLoop(), &base);
  EXPECT_EQ(pool.nextLoop(), &base);
  EXPECT_EQ(pool.allLoops(), std::vector<EventLoop*>{&base});
}

TEST_P(EventLoopDeathTest, SecondLoopOnSameThreadAborts) {
  EXPECT_DEATH(
      {
        EventLoop first(GetParam());
        EventLoop second(GetParam());
      },
      "thread [0-9]+ already has an EventLoop");
}

// The sink runs on the offending thread; it checks that the fatal line names
// both the loop's thread and that one, and says so on stderr.
void expectLineNamesBothThreads(pid_t loopTid) {
  const pid_t callerTid = CurrentThread::tid();
  Logger::setOutput([loopTid, callerTid](std::string_view line) {
    const bool both = line.find("thread " + std::to_string(loopTid)) != std::string_view::npos &&
                      line.find("thread " + std::to_string(callerTid)) != std::string_view::npos;
    const std::string out =
        (both ? "[names both threads] " : "[missing a thread] ") + std::string(line);
    std::fwrite(out.data(), 1, out.size(), stderr);
    std::fflush(stderr);
  });
}

TEST_P(EventLoopDeathTest, AssertInLoopThreadFromWrongThreadAborts) {
  EXPECT_DEATH(
      {
        EventLoop loop(GetParam());
        const pid_t loopTid = CurrentThread::tid();
        std::thread intruder([&] {
          expectLineNamesBothThreads(loopTid);
          loop.assertInLoopThread();
        });
        intruder.join();
      },
      "\\[names both threads\\] .* FATAL ");
}

TEST_P(EventLoopDeathTest, UpdateChannelFromWrongThreadAborts) {
  EXPECT_DEATH(
      {
        EventLoop loop(GetParam());
        const pid_t loopTid = CurrentThread::tid();
        UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
        Channel channel(&loop, fd.get());
        std::thread intruder([&] {
          expectLineNamesBothThreads(loopTid);
          channel.enableReading();  // EventLoop::updateChannel is loop-only
        });
        intruder.join();
      },
      "\\[names both threads\\] .* FATAL ");
}

TEST_P(EventLoopDeathTest, LoopFromWrongThreadAborts) {
  EXPECT_DEATH(
      {
        EventLoop loop(GetParam());
        const pid_t loopTid = CurrentThread::tid();
        std::thread intruder([&] {
          expectLineNamesBothThreads(loopTid);
          loop.loop();
        });
        intruder.join();
      },
      "\\[names both threads\\] .* FATAL ");
}

// The next two run their scenario in a child process (EXPECT_EXIT), so that
// if the library aborts later on (see the Channel assertion) only the child
// dies. The child exits 0 when the expectation held, 1 with a reason if not.
[[noreturn]] void exitWith(bool ok, const char* reason) {
  if (!ok) std::fprintf(stderr, "%s\n", reason);
  std::fflush(stderr);
  std::_Exit(ok ? 0 : 1);
}

// EventLoop.h: exceptions thrown by callbacks are caught and logged. A timer
// callback that throws must not take the other timers down with it. Runs on
// an EventLoopThread and waits on latches, not on a watchdog timer: the point
// is whether timers still fire.
TEST_P(EventLoopDeathTest, ExceptionInTimerCallbackDoesNotStopOtherTimers) {
  EXPECT_EXIT(
      {
        Logger::setOutput([](std::string_view) {});
        CountDownLatch threw(1);
        CountDownLatch functorRan(1);
        CountDownLatch laterTimerRan(1);
        EventLoopThread thread({}, "throwing", GetParam());
        EventLoop* loop = thread.startLoop();
        loop->runAfter(0ms, [&] {
          threw.countDown();
          throw std::runtime_error("timer failure");
        });
        loop->runAfter(20ms, [&] { laterTimerRan.countDown(); });
        if (!threw.waitFor(kWait)) exitWith(false, "the throwing timer never ran");
        // The loop itself survived: it still runs queued work...
        loop->queueInLoop([&] { functorRan.countDown(); });
        if (!functorRan.waitFor(kWait)) exitWith(false, "the loop stopped running functors");
        // ...and its other timers.
        exitWith(laterTimerRan.waitFor(5s), "a timer due after the throwing one never fired");
      },
      ::testing::ExitedWithCode(0), "");
}

// A Channel whose read callback throws must still be removable and
// destructible afterwards.
TEST_P(EventLoopDeathTest, ExceptionInChannelCallbackLeavesChannelUsable) {
  EXPECT_EXIT(
      {
        Logger::setOutput([](std::string_view) {});
        EventLoop loop(GetParam());
        loop.runAfter(kWait, [&] { exitWith(false, "watchdog: the event never arrived"); });
        UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
        auto channel = std::make_unique<Channel>(&loop, fd.get());
        int calls = 0;
        channel->setReadCallback([&](Timestamp) {
          uint64_t value = 0;
          (void)::read(fd.get(), &value, sizeof value);
          ++calls;
          loop.quit();
          throw std::runtime_error("read callback failure");
        });
        channel->enableReading();
        const uint64_t one = 1;
        if (::write(fd.get(), &one, sizeof one) != sizeof one) exitWith(false, "eventfd write");
        loop.loop();
        if (calls != 1) exitWith(false, "the read callback did not run exactly once");
        channel->disableAll();
        channel->remove();
        channel.reset();  // must not trip the Channel's "still handling an event" check
        exitWith(true, "");
      },
      ::testing::ExitedWithCode(0), "");
}

std::string pollerName(const ::testing::TestParamInfo<PollerKind>& info) {
  return std::string(pollerKindName(info.param));
}

INSTANTIATE_TEST_SUITE_P(Pollers, EventLoopTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);
INSTANTIATE_TEST_SUITE_P(Pollers, EventLoopDeathTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet
