// EventLoop::metrics(): turns, busy time, loop lag, timers and functors, on
// both backends; and nothing timed with Options::metrics off.
#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "net/EventLoop.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using std::chrono::milliseconds;

// Keeps the loop's thread busy (not waiting) for `d`.
void spin(Duration d) {
  const auto until = MonoClock::now() + d;
  while (MonoClock::now() < until) {
  }
}

class EventLoopMetricsTest : public test::LoopTest {};

TEST_P(EventLoopMetricsTest, CountsTurnsTimersFunctorsAndBusyTime) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  const TimerId parked = loop.runAfter(std::chrono::hours(1), [] {});
  EXPECT_EQ(loop.metrics().timersArmed, 2u);  // the watchdog and this one
  loop.runAfter(milliseconds(1), [] {});
  loop.runAfter(milliseconds(2), [&] {
    for (int i = 0; i < 3; ++i) loop.queueInLoop([] { spin(milliseconds(5)); });
    loop.queueInLoop([&] { loop.quit(); });
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  const EventLoop::Metrics m = loop.metrics();
  EXPECT_EQ(m.timersFired, 2u);
  EXPECT_EQ(m.timersArmed, 2u);
  EXPECT_GE(m.functorsRun, 4u);
  EXPECT_GE(m.turns, 1u);
  EXPECT_GE(m.busy, milliseconds(15));  // the spinning functors
  EXPECT_EQ(m.lag.count, m.turns);
  EXPECT_LE(m.lag.p50, m.lag.max);
  loop.cancel(parked);
  loop.runAfter(Duration::zero(), [&] { loop.quit(); });
  loop.loop();
  EXPECT_EQ(loop.metrics().timersArmed, 1u);  // the watchdog
}

TEST_P(EventLoopMetricsTest, ASlowHandlerShowsAsLag) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  // A timer's handler is an event of its turn: the turn's lag covers it.
  loop.runAfter(milliseconds(1), [] { spin(milliseconds(20)); });
  loop.runAfter(milliseconds(2), [&] { loop.quit(); });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_GE(loop.metrics().lag.max, milliseconds(20));
}

TEST_P(EventLoopMetricsTest, TimingsOffReadZeroAndCountersStillMove) {
  EventLoop loop(EventLoopOptions{.poller = GetParam(), .ioUring = {}, .metrics = false});
  armWatchdog(loop);
  loop.queueInLoop([] { spin(milliseconds(5)); });
  loop.runAfter(milliseconds(1), [&] { loop.quit(); });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  const EventLoop::Metrics m = loop.metrics();
  EXPECT_GE(m.turns, 1u);
  EXPECT_EQ(m.timersFired, 1u);
  EXPECT_GE(m.functorsRun, 1u);
  EXPECT_EQ(m.busy, Duration::zero());
  EXPECT_EQ(m.lag.count, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, EventLoopMetricsTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
