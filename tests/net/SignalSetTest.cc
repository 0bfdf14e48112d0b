// SignalSet (net/SignalSet.h), its coroutine awaitable (net/coro/Signal.h) and
// the signal masks of the library's threads (base/SignalMask.h), over both
// backends. Signals are raised on the test's own thread, whose loop reads
// them, or sent to the whole process with kill(); the sets leave them blocked
// in this thread, so each test starts with none of them pending.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "base/AsyncLogging.h"
#include "base/SignalMask.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/SignalSet.h"
#include "net/coro/Coro.h"
#include "net/coro/Signal.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;
using coro::Errc;
using coro::nextSignal;
using coro::SignalResult;
using coro::Task;

const std::vector<int>& testSignals() {
  static const std::vector<int> signals = {SIGHUP, SIGUSR1, SIGUSR2, SIGWINCH, SIGRTMIN};
  return signals;
}

// Consumes whatever of testSignals() is pending for this thread or the
// process (only a blocked signal can be pending).
void drainPending() {
  sigset_t set;
  ::sigemptyset(&set);
  for (const int signo : testSignals()) ::sigaddset(&set, signo);
  const timespec zero{0, 0};
  while (::sigtimedwait(&set, nullptr, &zero) > 0) {
  }
}

bool blockedHere(int signo) {
  sigset_t mask;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return ::sigismember(&mask, signo) == 1;
}

class SignalSetTest : public test::LoopTest {
 protected:
  void SetUp() override {
    test::LoopTest::SetUp();
    drainPending();
  }
  void TearDown() override { drainPending(); }
};

TEST_P(SignalSetTest, RaisedSignalRunsTheCallbackOnTheLoop) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  std::vector<int> got;
  bool onLoopThread = false;
  SignalSet set(&loop, {SIGUSR1, SIGUSR2}, [&](int signo) {
    got.push_back(signo);
    onLoopThread = loop.isInLoopThread();
    loop.quit();
  });
  EXPECT_TRUE(blockedHere(SIGUSR1));
  EXPECT_TRUE(set.contains(SIGUSR2));
  EXPECT_FALSE(set.contains(SIGHUP));
  ASSERT_EQ(::raise(SIGUSR1), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(got, std::vector<int>{SIGUSR1});
  EXPECT_TRUE(onLoopThread);
}

TEST_P(SignalSetTest, KillToTheProcessRunsTheCallback) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  int got = 0;
  SignalSet set(&loop, {SIGHUP}, [&](int signo) {
    got = signo;
    loop.quit();
  });
  // From the loop, so that the loop is already polling the signalfd.
  loop.queueInLoop([] { ::kill(::getpid(), SIGHUP); });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(got, SIGHUP);
}

// One read drains them all; a standard signal sent twice before it is read
// is one (the kernel merges it), a real-time one is queued each time.
TEST_P(SignalSetTest, BurstOfSignalsEachDeliveredOnce) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  std::map<int, int> counts;
  int total = 0;
  int wanted = 7;
  SignalSet set(&loop, testSignals(), [&](int signo) {
    ++counts[signo];
    if (++total == wanted) loop.quit();
  });
  for (const int signo : {SIGHUP, SIGUSR1, SIGUSR1, SIGUSR2, SIGWINCH})
    ASSERT_EQ(::raise(signo), 0);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(::kill(::getpid(), SIGRTMIN), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  // Nothing more was pending: a last signal, read with anything left over.
  wanted = 8;
  ASSERT_EQ(::raise(SIGUSR2), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  const std::map<int, int> expected = {
      {SIGHUP, 1}, {SIGUSR1, 1}, {SIGUSR2, 2}, {SIGWINCH, 1}, {SIGRTMIN, 3}};
  EXPECT_EQ(counts, expected);
}

TEST_P(SignalSetTest, CallbackMayDestroyTheSet) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  int calls = 0;
  std::unique_ptr<SignalSet> set;
  set = std::make_unique<SignalSet>(&loop, std::vector<int>{SIGUSR1, SIGUSR2}, [&](int) {
    ++calls;
    set.reset();
    loop.quit();
  });
  // Both in one read: the second must not reach the destroyed set.
  ASSERT_EQ(::raise(SIGUSR1), 0);
  ASSERT_EQ(::raise(SIGUSR2), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(set, nullptr);
}

// Kept signals: one per number, in the order they were read, for the next
// awaiter, whether or not the set has a callback.
TEST_P(SignalSetTest, SignalsWithNoAwaiterAreKeptOncePerNumber) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  int seen = 0;
  int wanted = 2;
  SignalSet set(&loop, {SIGUSR1, SIGUSR2}, [&](int) {
    if (++seen == wanted) loop.quit();
  });
  // Read in one go, lowest number first.
  ASSERT_EQ(::raise(SIGUSR2), 0);
  ASSERT_EQ(::raise(SIGUSR1), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  wanted = 3;
  ASSERT_EQ(::raise(SIGUSR1), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(seen, 3);
  std::vector<int> kept;
  while (const std::optional<int> signo = set.takePending()) kept.push_back(*signo);
  EXPECT_EQ(kept, (std::vector<int>{SIGUSR1, SIGUSR2}));
}

TEST_P(SignalSetTest, InvalidSignalsThrowAndBlockNothing) {
  EventLoop loop(GetParam());
  const int internalSignal = SIGRTMIN - 1;  // one of glibc's own
  for (const std::vector<int>& signals : std::vector<std::vector<int>>{
           {}, {0}, {-1}, {NSIG + 1}, {internalSignal}, {SIGXFSZ, SIGKILL}, {SIGXFSZ, SIGSTOP}}) {
    EXPECT_THROW({ SignalSet set(&loop, signals); }, std::invalid_argument) << signals.size();
  }
  for (const int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS}) {
    try {
      SignalSet set(&loop, {SIGXFSZ, sync});
      ADD_FAILURE() << "no exception for " << sync;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("SIG"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(blockedHere(SIGXFSZ));
}

// A loop thread's mask, read on the thread itself.
TEST_P(SignalSetTest, LoopThreadsBlockAsyncSignalsOnly) {
  sigset_t before;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &before);
  EventLoopThread thread({}, "sigmask", GetParam());
  EventLoop* loop = thread.startLoop();
  const sigset_t mask = test::runSync(loop, [] {
    sigset_t m;
    ::pthread_sigmask(SIG_SETMASK, nullptr, &m);
    return m;
  });
  for (const int signo : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM,
                          SIGWINCH, SIGURG, SIGRTMIN, SIGRTMAX}) {
    EXPECT_EQ(::sigismember(&mask, signo), 1) << "not blocked: " << signo;
  }
  for (const int signo :
       {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS, SIGPIPE, SIGKILL, SIGSTOP}) {
    EXPECT_EQ(::sigismember(&mask, signo), 0) << "blocked: " << signo;
  }
  // The starting thread's own mask is as it was.
  sigset_t after;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &after);
  for (int signo = 1; signo < NSIG; ++signo) {
    EXPECT_EQ(::sigismember(&before, signo), ::sigismember(&after, signo)) << signo;
  }
}

// The process's signal goes past the loop threads, started before the set,
// to the set: with any of them not blocking it, the kernel would hand it to
// that thread and SIGUSR2's default action would end the test program.
TEST_P(SignalSetTest, ProcessSignalReachesSetMadeAfterLoopThreadsStarted) {
  // As in a program that has not made a set yet (an earlier test's set left
  // it blocked here, and the loop threads would inherit that).
  sigset_t usr2;
  ::sigemptyset(&usr2);
  ::sigaddset(&usr2, SIGUSR2);
  ASSERT_EQ(::pthread_sigmask(SIG_UNBLOCK, &usr2, nullptr), 0);
  std::vector<std::unique_ptr<EventLoopThread>> threads;
  for (int i = 0; i < 3; ++i) {
    threads.push_back(std::make_unique<EventLoopThread>(ThreadInitCallback{},
                                                        "sig" + std::to_string(i), GetParam()));
    threads.back()->startLoop();
  }
  EventLoop loop(GetParam());
  armWatchdog(loop);
  constexpr int kSignals = 20;
  int got = 0;
  SignalSet set(&loop, {SIGUSR2}, [&](int) {
    if (++got == kSignals) {
      loop.quit();
    } else {
      ::kill(::getpid(), SIGUSR2);
    }
  });
  loop.queueInLoop([] { ::kill(::getpid(), SIGUSR2); });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(got, kSignals);
}

TEST(SignalMaskTest, AsyncLogWriterBlocksAsyncSignals) {
  std::mutex mutex;
  std::vector<std::pair<std::thread::id, sigset_t>> masks;
  AsyncLogging log({[&](std::string_view) {
                      sigset_t m;
                      ::pthread_sigmask(SIG_SETMASK, nullptr, &m);
                      std::lock_guard lock(mutex);
                      masks.emplace_back(std::this_thread::get_id(), m);
                    },
                    [] {}});
  log.start();
  log.append("line\n");
  ASSERT_TRUE(log.flush());
  log.stop();
  std::lock_guard lock(mutex);
  int writerCalls = 0;
  for (const auto& [id, mask] : masks) {
    if (id == std::this_thread::get_id()) continue;
    ++writerCalls;
    EXPECT_EQ(::sigismember(&mask, SIGTERM), 1);
    EXPECT_EQ(::sigismember(&mask, SIGINT), 1);
    EXPECT_EQ(::sigismember(&mask, SIGSEGV), 0);
  }
  EXPECT_GE(writerCalls, 1);
}

TEST(SignalMaskTest, BlockAsyncSignalsRestoresTheMask) {
  std::thread([] {
    ASSERT_FALSE(blockedHere(SIGTERM));
    {
      BlockAsyncSignals blocked;
      EXPECT_TRUE(blockedHere(SIGTERM));
      EXPECT_FALSE(blockedHere(SIGSEGV));
    }
    EXPECT_FALSE(blockedHere(SIGTERM));
    blockAsyncSignalsInThisThread();
    EXPECT_TRUE(blockedHere(SIGTERM));
    EXPECT_TRUE(blockedHere(SIGCHLD));
    EXPECT_FALSE(blockedHere(SIGABRT));
  }).join();
}

// The coroutine awaitable.

struct Outcome {
  std::vector<SignalResult> results;
};

Task<> awaitSignals(EventLoop* loop, SignalSet* set, Outcome* out, int count) {
  for (int i = 0; i < count; ++i) out->results.push_back(co_await nextSignal(*set));
  loop->quit();
}

TEST_P(SignalSetTest, AwaiterResumesWithTheSignal) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  SignalSet set(&loop, {SIGUSR1, SIGUSR2});
  Outcome out;
  coro::spawn(&loop, awaitSignals(&loop, &set, &out, 2));
  ASSERT_TRUE(out.results.empty());  // suspended
  ASSERT_EQ(::raise(SIGUSR2), 0);
  loop.runAfter(0ms, [] { ::kill(::getpid(), SIGUSR1); });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(out.results.size(), 2u);
  EXPECT_EQ(out.results[0].error, Errc::kOk);
  EXPECT_EQ(out.results[0].signo, SIGUSR2);
  EXPECT_TRUE(out.results[1]);
  EXPECT_EQ(out.results[1].signo, SIGUSR1);
}

// Read and dispatched while no task waited: the first co_await takes it at
// once, without suspending.
TEST_P(SignalSetTest, SignalBeforeTheAwaitIsKept) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  SignalSet set(&loop, {SIGUSR1}, [&loop](int) { loop.quit(); });
  ASSERT_EQ(::raise(SIGUSR1), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  Outcome out;
  coro::spawn(&loop, awaitSignals(&loop, &set, &out, 1));
  ASSERT_EQ(out.results.size(), 1u);
  EXPECT_TRUE(out.results[0]);
  EXPECT_EQ(out.results[0].signo, SIGUSR1);
  EXPECT_EQ(set.takePending(), std::nullopt);
}

// A task resumed by a signal that awaits again waits for the next one, not
// the same one again.
Task<> awaitTwiceRaisingBetween(EventLoop* loop, SignalSet* set, Outcome* out) {
  out->results.push_back(co_await nextSignal(*set));
  ::raise(SIGUSR1);
  out->results.push_back(co_await nextSignal(*set));
  loop->quit();
}

TEST_P(SignalSetTest, EveryWaitingTaskGetsTheSignal) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  SignalSet set(&loop, {SIGUSR1});
  std::vector<SignalResult> results;
  auto waiter = [](SignalSet* set, std::vector<SignalResult>* results) -> Task<> {
    results->push_back(co_await nextSignal(*set));
  };
  coro::spawn(&loop, waiter(&set, &results));
  Outcome twice;
  coro::spawn(&loop, awaitTwiceRaisingBetween(&loop, &set, &twice));
  coro::spawn(&loop, waiter(&set, &results));
  ASSERT_EQ(::raise(SIGUSR1), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(results.size(), 2u);
  for (const SignalResult& r : results) EXPECT_EQ(r.signo, SIGUSR1);
  ASSERT_EQ(twice.results.size(), 2u);
  EXPECT_TRUE(twice.results[0] && twice.results[1]);
  EXPECT_EQ(set.takePending(), std::nullopt);
}

TEST_P(SignalSetTest, WithTimeoutEndsTheWaitAndTheNextAwaitStillGetsTheSignal) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  SignalSet set(&loop, {SIGUSR1});
  std::vector<SignalResult> results;
  coro::spawn(&loop,
              [](EventLoop* loop, SignalSet* set, std::vector<SignalResult>* results) -> Task<> {
                results->push_back(co_await coro::withTimeout(5ms, nextSignal(*set)));
                ::raise(SIGUSR1);
                results->push_back(co_await coro::withTimeout(1h, nextSignal(*set)));
                loop->quit();
              }(&loop, &set, &results));
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].error, Errc::kTimedOut);
  EXPECT_EQ(results[1].error, Errc::kOk);
  EXPECT_EQ(results[1].signo, SIGUSR1);
}

TEST_P(SignalSetTest, WithStopEndsTheWaitAndAKeptSignalStaysKept) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  SignalSet set(&loop, {SIGUSR1}, [&loop](int) { loop.quit(); });
  std::stop_source stop;
  std::vector<SignalResult> results;
  auto waiter = [](EventLoop* loop, SignalSet* set, std::stop_token token,
                   std::vector<SignalResult>* results) -> Task<> {
    results->push_back(co_await coro::withStop(token, nextSignal(*set)));
    loop->quit();
  };
  coro::spawn(&loop, waiter(&loop, &set, stop.get_token(), &results));
  ASSERT_TRUE(results.empty());
  std::thread stopper([&stop] { stop.request_stop(); });
  loop.loop();
  stopper.join();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error, Errc::kCancelled);

  // Read with no task waiting: kept. A wait stopped already ends at once and
  // leaves it kept.
  ASSERT_EQ(::raise(SIGUSR1), 0);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  coro::spawn(&loop, waiter(&loop, &set, stop.get_token(), &results));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[1].error, Errc::kCancelled);
  EXPECT_EQ(set.takePending(), std::optional<int>(SIGUSR1));
}

TEST_P(SignalSetTest, DestroyingTheSetEndsItsAwaitersWithClosed) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  auto set = std::make_unique<SignalSet>(&loop, std::vector<int>{SIGUSR1});
  Outcome out;
  coro::spawn(&loop, awaitSignals(&loop, set.get(), &out, 1));
  loop.queueInLoop([&set] { set.reset(); });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(out.results.size(), 1u);
  EXPECT_EQ(out.results[0].error, Errc::kClosed);
  EXPECT_EQ(coro::detachedTaskCount(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Pollers, SignalSetTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
