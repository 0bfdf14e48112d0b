// TimingWheel (net/TimingWheel) on its own, driven tick by tick with
// advance(), and through TcpServer::Options::idleTimeout on loopback connections,
// on every backend: the closing window, busy connections left alone, 10k idle
// connections, peer activity racing expiry, and teardown with I/O threads.
//
// Durations are asserted only as the correctness window (never as speed):
// from the last byte the server read to the close, at least the timeout and
// at most timeout + tick, plus a stated slack on the upper bound only.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <any>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "base/CountDownLatch.h"
#include "base/Timestamp.h"
#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/TimingWheel.h"
#include "tests/net/ChildProcess.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;
using test::BlockingClient;
using test::runSync;
using test::waitUntil;

std::string millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// ---- the wheel on its own ----

// A connection over one end of a socketpair, never established: the wheel
// only holds it and hands it to the expire callback. `peers` keeps the other
// ends open.
TcpConnectionPtr makeConnection(EventLoop* loop, std::string name, std::vector<UniqueFd>* peers) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::system_error(errno, std::system_category(), "socketpair");
  }
  peers->emplace_back(fds[1]);
  return test::TcpConnectionAccess::create(loop, std::move(name), UniqueFd(fds[0]), InetAddress(),
                                           InetAddress());
}

// Tests that drive the wheel with advance() use an hour-long tick, so that
// its own timer never fires during the test.
class TimingWheelTest : public test::LoopTest {
 protected:
  TcpConnectionPtr make(const std::string& name) { return makeConnection(&loop_, name, &peers_); }
  TimingWheel::ExpireCallback recordExpired() {
    return [this](const TcpConnectionPtr& conn) { expired_.push_back(conn->name()); };
  }
  void advance(TimingWheel& wheel, int ticks) {
    for (int i = 0; i < ticks; ++i) wheel.advance();
  }

  // Built before SetUp() can skip: on epoll where the backend cannot run,
  // for a test that SetUp() then skips.
  EventLoop loop_{EventLoop::unavailableReason(GetParam()).empty() ? GetParam()
                                                                   : PollerKind::kEpoll};
  std::vector<UniqueFd> peers_;
  std::vector<std::string> expired_;
};

using Names = std::vector<std::string>;

TEST_P(TimingWheelTest, TickIsShortenedToDivideTheTimeoutAndBadArgumentsThrow) {
  EXPECT_EQ(TimingWheel::tickFor(300ms, 100ms), 100ms);
  EXPECT_EQ(TimingWheel::tickFor(1s, 300ms), 250ms);
  EXPECT_EQ(TimingWheel::tickFor(100ms, 1s), 100ms);  // a timeout shorter than the tick
  EXPECT_EQ(TimingWheel(&loop_, 1s, 300ms, recordExpired()).bucketCount(), 5u);
  EXPECT_EQ(TimingWheel(&loop_, 3h, 1h, recordExpired()).bucketCount(), 4u);
  EXPECT_THROW((void)TimingWheel::tickFor(0s, 1s), std::invalid_argument);
  EXPECT_THROW((void)TimingWheel::tickFor(-1s, 1s), std::invalid_argument);
  EXPECT_THROW((void)TimingWheel::tickFor(1s, 0s), std::invalid_argument);
  EXPECT_THROW((void)TimingWheel::tickFor(1h, 1us), std::invalid_argument);  // 3.6e9 buckets
  EXPECT_THROW(TimingWheel(&loop_, 1s, -1ms, recordExpired()), std::invalid_argument);
  // Closing an idle connection is the user's to ask for (TcpServer does).
  EXPECT_THROW(TimingWheel(&loop_, 1s, 1s, TimingWheel::ExpireCallback()), std::invalid_argument);
}

TEST_P(TimingWheelTest, TouchMovesAnEntryToTheNewestBucket) {
  TimingWheel wheel(&loop_, 3h, 1h, recordExpired());
  ASSERT_EQ(wheel.bucketCount(), 4u);
  TcpConnectionPtr a = make("a");
  TcpConnectionPtr b = make("b");
  const TimingWheel::Entry ea = wheel.add(a);
  const TimingWheel::Entry eb = wheel.add(b);
  EXPECT_EQ(wheel.size(), 2u);
  advance(wheel, 2);
  wheel.touch(ea);
  wheel.touch(ea);  // again in the same tick: already newest
  advance(wheel, 1);
  // Three ticks: b, added some time in tick 0, may have idled less than 3h.
  EXPECT_TRUE(expired_.empty());
  advance(wheel, 1);
  EXPECT_EQ(expired_, Names{"b"});
  advance(wheel, 1);
  EXPECT_EQ(expired_, Names{"b"});
  advance(wheel, 1);  // four ticks after a's touch in tick 2
  EXPECT_EQ(expired_, (Names{"b", "a"}));
  // The callback left both open: they stay tracked and come round again.
  EXPECT_EQ(wheel.size(), 2u);
  advance(wheel, 2);
  EXPECT_EQ(expired_, (Names{"b", "a", "b"}));
  wheel.remove(ea);
  wheel.remove(eb);
  EXPECT_EQ(wheel.size(), 0u);
  advance(wheel, 8);
  EXPECT_EQ(expired_.size(), 3u);
}

TEST_P(TimingWheelTest, RemoveStopsTrackingAndChurnReusesSlots) {
  TimingWheel wheel(&loop_, 3h, 1h, recordExpired());
  TcpConnectionPtr a = make("a");
  TcpConnectionPtr b = make("b");
  TcpConnectionPtr c = make("c");
  const TimingWheel::Entry ea = wheel.add(a);
  const TimingWheel::Entry eb = wheel.add(b);
  const TimingWheel::Entry ec = wheel.add(c);
  wheel.remove(eb);
  wheel.remove(TimingWheel::kNoEntry);  // nothing
  EXPECT_EQ(wheel.size(), 2u);
  advance(wheel, 4);
  EXPECT_EQ(expired_, (Names{"a", "c"}));

  // A freed slot is the next one handed out, and add/remove churn (across
  // ticks, too) leaves the tables as they were.
  TcpConnectionPtr d = make("d");
  EXPECT_EQ(wheel.add(d), eb);
  wheel.remove(eb);
  const size_t bytes = wheel.tableBytes();
  for (int i = 0; i < 10000; ++i) {
    const TimingWheel::Entry e = wheel.add(d);
    if (i % 7 == 0) wheel.advance();
    wheel.touch(e);
    wheel.remove(e);
  }
  EXPECT_EQ(wheel.size(), 2u);
  EXPECT_EQ(wheel.tableBytes(), bytes);
  wheel.remove(ea);
  wheel.remove(ec);
  EXPECT_EQ(wheel.size(), 0u);
}

TEST_P(TimingWheelTest, HoldsNoReferenceAndReclaimsEntriesOfDestroyedConnections) {
  TimingWheel wheel(&loop_, 3h, 1h, recordExpired());
  TcpConnectionPtr a = make("a");
  TcpConnectionPtr b = make("b");
  (void)wheel.add(a);
  (void)wheel.add(b);
  (void)wheel.add(make("c"));  // dies at once: nobody else holds it
  EXPECT_EQ(b.use_count(), 1);
  std::weak_ptr<TcpConnection> watch = b;
  b.reset();
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(wheel.size(), 3u);  // not noticed until their bucket expires
  const size_t bytes = wheel.tableBytes();
  advance(wheel, 4);
  EXPECT_EQ(expired_, Names{"a"});
  EXPECT_EQ(wheel.size(), 1u);
  // Their slots are reused rather than the tables growing.
  for (int i = 0; i < 2; ++i) (void)wheel.add(a);
  EXPECT_EQ(wheel.tableBytes(), bytes);
  EXPECT_EQ(wheel.size(), 3u);
}

TEST_P(TimingWheelTest, ExpireCallbackMayRemoveTouchAndAddEntriesOfItsOwnBucket) {
  std::vector<TcpConnectionPtr> conns;
  std::vector<TimingWheel::Entry> entries;
  TcpConnectionPtr extra = make("extra");
  TimingWheel* wheelPtr = nullptr;
  TimingWheel wheel(&loop_, 3h, 1h, [&](const TcpConnectionPtr& conn) {
    expired_.push_back(conn->name());
    if (conn == conns[0]) {
      // What a close that runs removeConnection synchronously does: drop
      // entries further down this bucket, and this very one.
      wheelPtr->remove(entries[1]);
      wheelPtr->remove(entries[0]);
      wheelPtr->touch(entries[3]);  // data for a later one: it is saved
      (void)wheelPtr->add(extra);   // new, hence not due in this pass
    }
  });
  wheelPtr = &wheel;
  for (int i = 0; i < 5; ++i) {
    conns.push_back(make("c" + std::to_string(i)));
    entries.push_back(wheel.add(conns.back()));
  }
  advance(wheel, 4);
  EXPECT_EQ(expired_, (Names{"c0", "c2", "c4"}));
  EXPECT_EQ(wheel.size(), 4u);  // c2, c3, c4, extra
  expired_.clear();
  advance(wheel, 4);
  std::sort(expired_.begin(), expired_.end());
  EXPECT_EQ(expired_, (Names{"c2", "c3", "c4", "extra"}));
}

TEST_P(TimingWheelTest, ThrowingCallbackDoesNotKeepTheRestOfTheBucketOpen) {
  TimingWheel wheel(&loop_, 3h, 1h, [&](const TcpConnectionPtr& conn) {
    expired_.push_back(conn->name());
    if (conn->name() == "a") throw std::runtime_error("expire callback failed");
  });
  TcpConnectionPtr a = make("a");
  TcpConnectionPtr b = make("b");
  (void)wheel.add(a);
  (void)wheel.add(b);
  advance(wheel, 4);
  EXPECT_EQ(expired_, (Names{"a", "b"}));
}

TEST_P(TimingWheelTest, ItsOwnTimerExpiresAnEntryWithinTheWindow) {
  constexpr Duration kTimeout = 300ms;
  constexpr Duration kTick = 100ms;
  // Slack on the upper bound only: the timerfd's wake-up and the loop's
  // dispatch, each tick a little late (TimerQueue re-arms from the run).
  constexpr Duration kSlack = 150ms;
  armWatchdog(loop_);
  MonoTime expiredAt;
  TimingWheel wheel(&loop_, kTimeout, kTick, [&](const TcpConnectionPtr&) {
    expiredAt = MonoClock::now();
    loop_.quit();
  });
  TcpConnectionPtr a = make("a");
  const MonoTime before = MonoClock::now();
  const TimingWheel::Entry e = wheel.add(a);
  const MonoTime after = MonoClock::now();
  loop_.loop();
  ASSERT_FALSE(timedOut_);
  // [before, after] contains the add: at least the timeout after `after`,
  // at most timeout + tick (+ slack) after `before`.
  EXPECT_GE(expiredAt - after, kTimeout) << millis(expiredAt - after);
  EXPECT_LE(expiredAt - before, kTimeout + kTick + kSlack) << millis(expiredAt - before);
  wheel.remove(e);
}

INSTANTIATE_TEST_SUITE_P(Backends, TimingWheelTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

// ---- through TcpServer::Options::idleTimeout ----

class IdleTimeoutTest : public test::EchoServerTest {
 protected:
  // An echo server that closes connections idle for `timeout`; `configure`
  // runs on the loop thread before start().
  void startServer(Duration timeout, Duration tick, int threads = 0,
                   const std::function<void(TcpServer&)>& configure = {}) {
    EchoServerTest::startServer(configure,
                                {.threads = threads, .idleTimeout = timeout, .idleTick = tick});
  }
};

TEST_P(IdleTimeoutTest, IdleConnectionIsClosedBetweenTimeoutAndTimeoutPlusTick) {
  constexpr Duration kTimeout = 300ms;
  constexpr Duration kTick = 100ms;
  // Measured from before the client's last send to after it sees EOF, an
  // interval that contains [server reads the byte, server closes]: the lower
  // bound holds exactly, and the upper one also takes in loopback delivery,
  // the server loop's and this thread's wake-ups, and the close's hop through
  // the server's loop. That is the slack, on the upper bound only.
  constexpr Duration kSlack = 150ms;
  startServer(kTimeout, kTick);
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("first"));
  ASSERT_EQ(client.recvExactly(5), "first");
  const MonoTime lastSend = MonoClock::now();
  ASSERT_TRUE(client.sendAll("last"));
  ASSERT_EQ(client.recvExactly(4), "last");
  bool eof = false;
  const std::string extra = client.recvUntilEof(&eof);
  const int error = errno;
  const Duration closedAfter = MonoClock::now() - lastSend;
  ASSERT_TRUE(eof) << "no EOF: " << std::strerror(error) << " after " << millis(closedAfter);
  EXPECT_TRUE(extra.empty()) << extra;
  EXPECT_GE(closedAfter, kTimeout) << millis(closedAfter);
  EXPECT_LE(closedAfter, kTimeout + kTick + kSlack) << millis(closedAfter);
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_EQ(downs_.load(), 1);
}

TEST_P(IdleTimeoutTest, ConnectionThatKeepsSendingStaysOpenWhileAnIdleOneIsClosed) {
  constexpr Duration kTimeout = 300ms;
  constexpr Duration kTick = 100ms;
  startServer(kTimeout, kTick);
  BlockingClient idle(address_);
  BlockingClient busy(address_);
  ASSERT_TRUE(waitUntil([&] { return connectionCount() == 2; }));

  // One byte every tick/2 for three timeouts. The sleep paces the sender; a
  // stall of this thread longer than the timeout would make a close
  // legitimate, so the longest gap between sends is kept to tell.
  const MonoTime until = MonoClock::now() + 3 * kTimeout;
  MonoTime lastSend = MonoClock::now();
  Duration longestGap{};
  bool busyClosed = false;
  while (MonoClock::now() < until) {
    const MonoTime now = MonoClock::now();
    longestGap = std::max(longestGap, now - lastSend);
    lastSend = now;
    if (!busy.sendAll("b") || busy.recvExactly(1) != "b") {
      busyClosed = true;
      break;
    }
    std::this_thread::sleep_for(kTick / 2);
  }
  EXPECT_FALSE(busyClosed && longestGap < kTimeout)
      << "closed although it sent at least every " << millis(longestGap);

  bool eof = false;
  EXPECT_TRUE(idle.recvUntilEof(&eof).empty());
  EXPECT_TRUE(eof) << "the idle connection was not closed";
  if (!busyClosed) {
    EXPECT_EQ(connectionCount(), 1u);
    ASSERT_TRUE(busy.sendAll("still here"));
    EXPECT_EQ(busy.recvExactly(10), "still here");
  }
}

// Raises RLIMIT_NOFILE's soft limit to `needed` (at most the hard limit) for
// the object's life.
class FdLimit {
 public:
  explicit FdLimit(rlim_t needed) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    if (saved_.rlim_cur >= needed) {
      ok_ = true;
      return;
    }
    if (saved_.rlim_max < needed) return;
    rlimit raised = saved_;
    raised.rlim_cur = needed;
    ok_ = ::setrlimit(RLIMIT_NOFILE, &raised) == 0;
    changed_ = ok_;
  }
  ~FdLimit() {
    if (changed_) ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  FdLimit(const FdLimit&) = delete;
  FdLimit& operator=(const FdLimit&) = delete;

  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] rlim_t hardLimit() const { return saved_.rlim_max; }

 private:
  rlimit saved_{};
  bool ok_ = false;
  bool changed_ = false;
};

// "key=value" out of the helper's report line, or -1.
int64_t reportValue(const std::string& report, const std::string& key) {
  const size_t at = report.find(key + "=");
  if (at == std::string::npos) return -1;
  return std::strtoll(report.c_str() + at + key.size() + 1, nullptr, 10);
}

// The server sends `payload` to every client through a small send buffer,
// then closes once it is out; clients send nothing at all. Counts closes.
// The callback shares the payload rather than referring to the test's copy:
// the server thread reads it, and only the socket orders that read before
// the test body ends and frees its string, an order ThreadSanitizer cannot
// see (it reported the free as a race with the read).
void sendPayloadSlowly(TcpServer& server, std::shared_ptr<const std::string> payload,
                       std::atomic<int>* downs) {
  server.setConnectionCallback([payload = std::move(payload), downs](const TcpConnectionPtr& conn) {
    if (!conn->connected()) {
      ++*downs;
      return;
    }
    const int sndbuf = 16 * 1024;
    ::setsockopt(conn->fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    conn->send(*payload);
    conn->closeAfterOutput();
  });
}

TEST_P(IdleTimeoutTest, ASlowReaderOfALongAnswerIsNotIdle) {
  const auto payload = std::make_shared<const std::string>(test::randomBytes(1024 * 1024, 7));
  startServer(300ms, 100ms, 0,
              [&](TcpServer& server) { sendPayloadSlowly(server, payload, &downs_); });
  BlockingClient client(address_, 16 * 1024);
  // About 2.5 s of reading at this pace, many idle timeouts long, while the
  // client itself sends nothing: only the server's progress keeps it open.
  // The pacing is the behaviour under test, not synchronisation.
  std::string got;
  for (;;) {
    const std::string chunk = client.recvExactly(16 * 1024);
    got += chunk;
    if (chunk.size() < 16 * 1024) break;  // EOF (or an error)
    std::this_thread::sleep_for(40ms);
  }
  ASSERT_EQ(got.size(), payload->size()) << "kicked while still reading";
  EXPECT_TRUE(got == *payload);
}

TEST_P(IdleTimeoutTest, AReaderThatStopsReadingIsKicked) {
  const auto payload = std::make_shared<const std::string>(test::randomBytes(4 * 1024 * 1024, 8));
  startServer(300ms, 100ms, 0,
              [&](TcpServer& server) { sendPayloadSlowly(server, payload, &downs_); });
  BlockingClient client(address_, 16 * 1024);
  ASSERT_EQ(client.recvExactly(64 * 1024), payload->substr(0, 64 * 1024));
  // Stop reading: the server's queue stops moving and the wheel closes it.
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; })) << "never kicked";
  bool eof = false;
  const std::string rest = client.recvUntilEof(&eof);  // what the kernels held
  EXPECT_LT(64 * 1024 + rest.size(), payload->size());
}

TEST_P(IdleTimeoutTest, TenThousandIdleConnectionsAreAllClosedOnTime) {
  constexpr int kConnections = 10000;
  constexpr Duration kTimeout = 4s;
  constexpr Duration kTick = 250ms;
  // Connects are spread over 1.5 s, so that they expire over several ticks
  // rather than in one or two; the timeout leaves as much again for a
  // machine so loaded (a sanitizer build beside other work) that the
  // connects take twice as long: all 10k must be open at once before the
  // first expires (with a 2 s timeout, 6500 of them were once).
  constexpr Duration kSpread = 1500ms;
  // The window is checked where the wheel acts: from the server's last
  // receive (or the connection's start) to the idle callback. The slack, on
  // the upper bound only: closing a bucket's connections keeps their loop
  // busy (each close hops through the server's loop, and on io_uring waits
  // for a cancel to complete: a few hundred ms for ~1000 closes per loop
  // under a sanitizer), the next tick runs that much late, and TimerQueue
  // re-arms from the late run. A connection that missed its bucket would be
  // a whole timeout late, which this bound still tells apart.
  constexpr Duration kSlack = 1s;
  // The clients run in a child process (idle_clients_main), which inherits
  // the limit: each side needs one fd per connection, plus a margin.
  constexpr rlim_t kFdsNeeded = kConnections + 512;
  FdLimit limit(kFdsNeeded);
  if (!limit.ok()) {
    GTEST_SKIP() << "needs " << kFdsNeeded << " fds per process; RLIMIT_NOFILE's hard limit is "
                 << limit.hardLimit();
  }
  const std::string helper = test::testBinary("idle_clients_main");
  ASSERT_FALSE(helper.empty()) << "idle_clients_main not found in the runfiles";
  const int baseline = test::openFdCount();

  // Each connection's context is when the server last heard from it, set
  // just after the wheel's add or touch.
  std::mutex mutex;
  Duration longestIdle{};  // guarded by mutex
  int expired = 0;         // guarded by mutex
  int live = 0;            // guarded by mutex
  int peakLive = 0;        // guarded by mutex
  startServer(kTimeout, kTick, 2, [&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (conn->connected()) conn->setContext(MonoClock::now());
      (conn->connected() ? ups_ : downs_).fetch_add(1);
      std::lock_guard lock(mutex);
      live += conn->connected() ? 1 : -1;
      peakLive = std::max(peakLive, live);
    });
    server.setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
      conn->setContext(MonoClock::now());
      conn->send(buf);
    });
    server.setIdleCallback([&](const TcpConnectionPtr& conn) {
      const Duration idle = MonoClock::now() - std::any_cast<MonoTime>(conn->context());
      {
        std::lock_guard lock(mutex);
        longestIdle = std::max(longestIdle, idle);
        ++expired;
      }
      conn->forceClose();
    });
  });

  auto ms = [](Duration d) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  const test::ChildResult child =
      test::runChild({helper, std::to_string(address_.port()), std::to_string(kConnections),
                      ms(kSpread), ms(kTimeout + kTick + kSlack + test::kWait)},
                     test::currentEnvironment(), std::chrono::minutes(4));
  ASSERT_EQ(child.exitCode, 0) << child.describe();
  EXPECT_EQ(reportValue(child.out, "unexpected"), 0) << child.out;
  ASSERT_EQ(reportValue(child.out, "eofs"), kConnections) << child.out;
  // The client's measure runs from before its connect (or its last byte) to
  // after it saw EOF, so it contains [server's last touch, server's close]:
  // the lower bound is exact.
  const auto shortest = std::chrono::microseconds(reportValue(child.out, "shortest_us"));
  EXPECT_GE(shortest, kTimeout) << millis(shortest) << "; " << child.out;
  EXPECT_EQ(ups_.load(), kConnections);
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_EQ(downs_.load(), kConnections);
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(peakLive, kConnections) << "they were not all open at once";
    EXPECT_EQ(expired, kConnections);
    EXPECT_LE(longestIdle, kTimeout + kTick + kSlack) << millis(longestIdle);
  }
  stopServer();
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

TEST_P(IdleTimeoutTest, PeerDataAndClosesRacingExpiryAreSafe) {
  constexpr int kClients = 200;
  constexpr Duration kTimeout = 300ms;
  constexpr Duration kTick = 100ms;
  // One loop for everything (threads 0): a close then runs removeConnection
  // synchronously, inside the handler that noticed it.
  startServer(kTimeout, kTick);
  std::vector<std::unique_ptr<BlockingClient>> clients;
  const MonoTime firstConnect = MonoClock::now();
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
  ASSERT_TRUE(waitUntil([&] { return connectionCount() == kClients; }));
  const MonoTime allAdded = MonoClock::now();

  // Hold the server's loop across the time the wheel expires them, which
  // falls in [firstConnect + timeout, allAdded + timeout + tick], while the
  // peers send a byte and close (FIN or RST) or just send, spread over that
  // time. On release one poll returns the tick and the peers' data and
  // closes together, in whatever order they became ready. The sleeps wait
  // for times to pass, not for events.
  CountDownLatch holding(1);
  CountDownLatch release(1);
  std::this_thread::sleep_until(firstConnect + kTimeout - 20ms);
  loop_->runInLoop([&] {
    holding.countDown();
    EXPECT_TRUE(release.waitFor(test::kWait));
  });
  ASSERT_TRUE(holding.waitFor(test::kWait));
  const MonoTime holdUntil = allAdded + kTimeout + kTick + 20ms;
  const Duration step = (holdUntil - MonoClock::now()) / kClients;
  for (int i = 0; i < kClients; ++i) {
    BlockingClient& client = *clients[i];
    switch (i % 4) {
      case 0:
        client.sendAll("x");
        client.close();
        break;
      case 1:
        client.sendAll("x");
        client.resetConnection();
        break;
      case 2:
        client.sendAll("x");  // stays open: touched, so one more timeout
        break;
      default:
        break;  // idle: the wheel's
    }
    std::this_thread::sleep_for(step);
  }
  release.countDown();

  // Everyone is gone at the latest one timeout after its byte; the sender
  // that stayed open sees its echo (if the server read it) and then EOF.
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_EQ(downs_.load(), kClients);
  for (int i = 2; i < kClients; i += 4) {
    bool eof = false;
    const std::string got = clients[i]->recvUntilEof(&eof);
    EXPECT_TRUE(eof) << "client " << i;
    EXPECT_TRUE(got.empty() || got == "x") << "client " << i << ": '" << got << "'";
  }
}

TEST_P(IdleTimeoutTest, ServerDestroyedWithOpenConnectionsTearsItsWheelsDownOnTheirLoops) {
  for (const int threads : {0, 3}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    const int baseline = test::openFdCount();
    startServer(10s, 1s, threads);
    std::vector<std::unique_ptr<BlockingClient>> clients;
    for (int i = 0; i < 30; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
    ASSERT_TRUE(waitUntil([&] { return connectionCount() == 30; }));
    // Some are closing as the server goes: their removal from the wheel is
    // queued (or about to be) when the wheels are handed to their loops.
    for (int i = 0; i < 30; i += 3) clients[i]->close();
    stopServer();
    for (int i = 0; i < 30; ++i) {
      if (i % 3 == 0) continue;
      bool eof = false;
      EXPECT_TRUE(clients[i]->recvUntilEof(&eof).empty());
      EXPECT_TRUE(eof) << "client " << i;
    }
    clients.clear();
    EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
        << test::openFdCount() << " fds open, " << baseline << " before";
  }
}

TEST_P(IdleTimeoutTest, BadValuesThrowAndZeroIsOff) {
  runSync(loop_, [&] {
    const auto make = [&](Duration timeout, Duration tick) {
      TcpServer server(loop_, InetAddress(0, true), "args",
                       {.idleTimeout = timeout, .idleTick = tick});
    };
    EXPECT_THROW(make(-1s, 1s), std::invalid_argument);
    EXPECT_THROW(make(1s, 0s), std::invalid_argument);
    EXPECT_THROW(make(1h, 1ns), std::invalid_argument);
    EXPECT_NO_THROW(make(0s, 0s));  // off: the tick is not looked at
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, IdleTimeoutTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
