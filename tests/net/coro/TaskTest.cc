// Task, spawn, sleep, withTimeout and withStop on a loop, without sockets;
// over both backends (the timers and the queue are the loop's).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/coro/Coro.h"
#include "tests/net/TestUtil.h"

using namespace libnet;
using namespace libnet::coro;
using namespace std::chrono_literals;

namespace {

class TaskTest : public test::LoopTest {};

Task<int> answer() { co_return 42; }

Task<int> addOne(int depth) {
  if (depth == 0) co_return 0;
  co_return 1 + co_await addOne(depth - 1);
}

Task<> thrower() {
  co_await sleep(1ms);
  throw std::runtime_error("boom");
}

// Increments *destroyed when its frame goes.
struct DestroyCounter {
  explicit DestroyCounter(int* destroyed) : destroyed_(destroyed) {}
  ~DestroyCounter() { ++*destroyed_; }
  int* destroyed_;
};

// Coroutine lambdas below capture nothing: a lambda's captures live in the
// closure object, which is gone once the expression that made the task ends,
// while the task runs later. State comes in as parameters (copied into the
// frame).

TEST_P(TaskTest, ValuesAndExceptionsReachTheAwaiter) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  int value = 0;
  std::string caught;
  spawn(&loop, [](EventLoop* loop, int* value, std::string* caught) -> Task<> {
    *value = co_await answer();
    try {
      co_await thrower();
    } catch (const std::runtime_error& e) {
      *caught = e.what();
    }
    loop->quit();
  }(&loop, &value, &caught));
  loop.loop();
  EXPECT_FALSE(timedOut_);
  EXPECT_EQ(value, 42);
  EXPECT_EQ(caught, "boom");
  EXPECT_EQ(detachedTaskCount(), 0u);
}

TEST_P(TaskTest, SynchronousCompletionsDoNotGrowTheStack) {
  EventLoop loop(GetParam());
  long sum = 0;
  // A million tasks that complete without suspending, awaited in turn: each
  // returns to its awaiter, which never suspends, rather than resuming it
  // from inside (which would nest a million frames).
  spawn(&loop, [](long* sum) -> Task<> {
    for (int i = 0; i < 1'000'000; ++i) *sum += co_await answer();
  }(&sum));
  EXPECT_EQ(sum, 42L * 1'000'000);
  int depth = 0;
  spawn(&loop, [](int* depth) -> Task<> { *depth = co_await addOne(1'000); }(&depth));
  EXPECT_EQ(depth, 1'000);
}

struct SleepResults {
  Errc slept = Errc::kCancelled;
  Errc timedOut = Errc::kOk;
  Errc inner = Errc::kOk;
  int afterTimeout = -1;
};

Task<int> sleepTwice(SleepResults* r) {
  r->inner = co_await sleep(1h);
  const Errc again = co_await sleep(1h);
  co_return again == Errc::kTimedOut ? 1 : 0;
}

TEST_P(TaskTest, SleepAndTimeout) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  SleepResults r;
  spawn(&loop, [](EventLoop* loop, SleepResults* r) -> Task<> {
    r->slept = co_await sleep(1ms);
    r->timedOut = co_await withTimeout(5ms, sleep(1h));
    // A timeout around a task: the operation it is suspended on ends with
    // kTimedOut, and so does the next one it starts inside the scope.
    r->afterTimeout = co_await withTimeout(5ms, sleepTwice(r));
    loop->quit();
  }(&loop, &r));
  loop.loop();
  EXPECT_FALSE(timedOut_);
  EXPECT_EQ(r.slept, Errc::kOk);
  EXPECT_EQ(r.timedOut, Errc::kTimedOut);
  EXPECT_EQ(r.inner, Errc::kTimedOut);
  EXPECT_EQ(r.afterTimeout, 1);
}

TEST_P(TaskTest, StopRequestedFromAnotherThreadCancelsEverySuspendedTask) {
  EventLoopThread thread(nullptr, "coro", GetParam());
  EventLoop* loop = thread.startLoop();
  std::stop_source stop;
  constexpr int kTasks = 1000;
  std::atomic<int> suspended{0};
  std::atomic<int> cancelled{0};
  for (int i = 0; i < kTasks; ++i) {
    spawn(
        loop,
        [](std::atomic<int>* suspended, std::atomic<int>* cancelled) -> Task<> {
          ++*suspended;
          if (co_await sleep(1h) == Errc::kCancelled) ++*cancelled;
        }(&suspended, &cancelled),
        stop.get_token());
  }
  ASSERT_TRUE(test::waitUntil([&] { return suspended == kTasks; }));
  stop.request_stop();
  ASSERT_TRUE(test::waitUntil([&] { return cancelled == kTasks; }));
  EXPECT_EQ(test::runSync(loop, [] { return detachedTaskCount(); }), 0u);
}

TEST_P(TaskTest, SpawnFromForeignThreadsRunsOnTheLoop) {
  EventLoopThread thread(nullptr, "coro", GetParam());
  EventLoop* loop = thread.startLoop();
  int onLoop = 0;  // touched on the loop thread only
  std::atomic<int> done{0};
  std::atomic<int> offLoop{0};
  std::vector<std::thread> spawners;
  for (int t = 0; t < 4; ++t) {
    spawners.emplace_back([&] {
      for (int i = 0; i < 250; ++i) {
        spawn(loop,
              [](EventLoop* loop, int* onLoop, std::atomic<int>* done,
                 std::atomic<int>* offLoop) -> Task<> {
                if (!loop->isInLoopThread()) ++*offLoop;
                co_await sleep(0ms);
                ++*onLoop;
                ++*done;
              }(loop, &onLoop, &done, &offLoop));
      }
    });
  }
  for (std::thread& t : spawners) t.join();
  ASSERT_TRUE(test::waitUntil([&] { return done == 1000; }));
  EXPECT_EQ(test::runSync(loop, [&] { return onLoop; }), 1000);
  EXPECT_EQ(offLoop, 0);
}

Task<> sleepForever(int* counter) {
  DestroyCounter guard(counter);
  co_await sleep(1h);
}

TEST_P(TaskTest, DestroyingTheLoopDestroysSuspendedTasks) {
  int destroyed = 0;
  {
    EventLoop loop(GetParam());
    for (int i = 0; i < 100; ++i) {
      spawn(&loop, [](int* counter) -> Task<> {
        DestroyCounter guard(counter);
        co_await withTimeout(1h, sleepForever(counter));
      }(&destroyed));
    }
    EXPECT_EQ(detachedTaskCount(), 100u);
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 200);  // both frames of every task
  EXPECT_EQ(detachedTaskCount(), 0u);
}

TEST_P(TaskTest, AnExceptionEscapingADetachedTaskIsContained) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  bool after = false;
  spawn(&loop, thrower());
  spawn(&loop, [](EventLoop* loop, bool* after) -> Task<> {
    co_await sleep(10ms);
    *after = true;
    loop->quit();
  }(&loop, &after));
  loop.loop();
  EXPECT_TRUE(after);
  EXPECT_EQ(detachedTaskCount(), 0u);
}

TEST_P(TaskTest, FramesAreCountedAndAwaitingAllocatesNone) {
  EventLoop loop(GetParam());
  const uint64_t before = frameAllocations();
  spawn(&loop, []() -> Task<> {
    for (int i = 0; i < 10; ++i) co_await answer();
  }());
  // The root, the task and ten awaited tasks.
  EXPECT_EQ(frameAllocations() - before, 12u);
}

INSTANTIATE_TEST_SUITE_P(Backends, TaskTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
