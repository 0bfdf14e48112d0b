// TcpServer::drain on real loopback sockets: every backend, without I/O
// threads, and with two I/O threads in both accept modes.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "base/UniqueFd.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

enum class Threads { kNone, kPerLoop, kHandOver };

using Param = std::tuple<PollerKind, Threads>;

class TcpServerDrainTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(std::get<0>(GetParam()));
    thread_ = std::make_unique<EventLoopThread>(nullptr, "server", std::get<0>(GetParam()));
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    if (server_) runSync(loop_, [&] { server_.reset(); });
    thread_.reset();
  }

  // An echo server; `drainCallback` (if any) replaces the default; "big"
  // from a client is answered with kBig bytes. maxConnections: Options'.
  void startServer(TcpServer::DrainCallback drainCallback = {}, size_t maxConnections = 0) {
    TcpServer::Options options;
    options.maxConnections = maxConnections;
    const Threads threads = std::get<1>(GetParam());
    options.threads = threads == Threads::kNone ? 0 : 2;
    options.acceptMode = threads == Threads::kHandOver ? TcpServer::AcceptMode::kHandOver
                                                       : TcpServer::AcceptMode::kPerLoop;
    options.maxQueuedOutput = 0;
    runSync(loop_, [&] {
      server_ = std::make_unique<TcpServer>(loop_, InetAddress(0, true), "drain", options);
      server_->setConnectionCallback([this](const TcpConnectionPtr& conn) {
        if (conn->connected()) ups_.fetch_add(1);
      });
      server_->setMessageCallback([this](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
        if (buf->retrieveAllAsString() == "big") {
          conn->send(std::string(kBig, 'x'));
          bigQueued_.store(true);
        }
      });
      if (drainCallback) server_->setDrainCallback(std::move(drainCallback));
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  // Starts a drain; the future is ready once `done` ran.
  std::future<void> drain(Duration deadline) {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> ready = done->get_future();
    runSync(loop_, [&] { server_->drain(deadline, [done] { done->set_value(); }); });
    return ready;
  }

  size_t connectionCount() {
    return runSync(loop_, [&] { return server_->connectionCount(); });
  }

  static constexpr size_t kBig = 8 * 1024 * 1024;
  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  SocketAddress address_;
  std::atomic<int> ups_{0};
  std::atomic<bool> bigQueued_{false};
};

bool ready(std::future<void>& f) { return f.wait_for(test::kWait) == std::future_status::ready; }

TEST_P(TcpServerDrainTest, ClosesIdleConnectionsThenRunsDone) {
  startServer();
  std::vector<std::unique_ptr<BlockingClient>> clients;
  for (int i = 0; i < 4; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
  ASSERT_TRUE(waitUntil([&] { return ups_.load() == 4; }));
  std::future<void> done = drain(std::chrono::seconds(30));
  EXPECT_TRUE(runSync(loop_, [&] { return server_->draining(); }));
  for (auto& client : clients) {
    bool eof = false;
    EXPECT_EQ(client->recvUntilEof(&eof), "");
    EXPECT_TRUE(eof);
    client->close();  // the default callback half-closed: the server waits for ours
  }
  ASSERT_TRUE(ready(done));
  EXPECT_EQ(connectionCount(), 0u);
}

// Every socket accepted must reach its end for the drain to be done; one
// refused by a limit ends there (with kHandOver, the server counts what its
// acceptor took against what the loops made of it).
TEST_P(TcpServerDrainTest, RefusedConnectionsDoNotHoldTheDrain) {
  startServer({}, /*maxConnections=*/1);
  auto first = std::make_unique<BlockingClient>(address_);
  ASSERT_TRUE(waitUntil([&] { return ups_.load() == 1; }));
  BlockingClient refused(address_);
  bool eof = false;
  EXPECT_EQ(refused.recvUntilEof(&eof), "");
  EXPECT_TRUE(eof);
  first->close();
  ASSERT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  std::future<void> done = drain(std::chrono::seconds(60));
  ASSERT_TRUE(ready(done));
  uint64_t refusedCount = 0;
  for (const TcpServer::LoopStats& s : runSync(loop_, [&] { return server_->loopStats(); })) {
    refusedCount += s.refused;
  }
  EXPECT_EQ(refusedCount, 1u);
}

TEST_P(TcpServerDrainTest, QueuedOutputArrivesWholeBeforeTheClose) {
  startServer();
  BlockingClient client(address_, /*rcvbuf=*/16 * 1024);
  ASSERT_TRUE(client.sendAll("big"));
  ASSERT_TRUE(waitUntil([&] { return bigQueued_.load(); }));
  std::future<void> done = drain(std::chrono::seconds(30));
  bool eof = false;
  EXPECT_EQ(client.recvUntilEof(&eof).size(), kBig);
  EXPECT_TRUE(eof);
  client.close();
  EXPECT_TRUE(ready(done));
}

TEST_P(TcpServerDrainTest, DoneWaitsForTheLastConnection) {
  std::atomic<int> told{0};
  startServer([&](const TcpConnectionPtr&) { told.fetch_add(1); });
  BlockingClient client(address_);
  ASSERT_TRUE(waitUntil([&] { return ups_.load() == 1; }));
  std::future<void> done = drain(std::chrono::seconds(60));
  ASSERT_TRUE(waitUntil([&] { return told.load() == 1; }));
  // Told, left open by the callback: the drain goes on.
  EXPECT_EQ(done.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  EXPECT_EQ(connectionCount(), 1u);
  ASSERT_TRUE(client.sendAll("still served"));
  EXPECT_EQ(client.recvExactly(0), "");
  client.close();
  EXPECT_TRUE(ready(done));
  EXPECT_EQ(told.load(), 1);
}

TEST_P(TcpServerDrainTest, DeadlineForcesAConnectionThatNeverCloses) {
  startServer([](const TcpConnectionPtr&) {});
  BlockingClient client(address_);
  ASSERT_TRUE(waitUntil([&] { return ups_.load() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  std::future<void> done = drain(std::chrono::milliseconds(200));
  ASSERT_TRUE(ready(done));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  bool eof = false;
  (void)client.recvUntilEof(&eof);  // a FIN or a reset: either way, closed
  EXPECT_EQ(connectionCount(), 0u);
}

TEST_P(TcpServerDrainTest, SecondDrainWithZeroDeadlineForces) {
  startServer([](const TcpConnectionPtr&) {});
  BlockingClient client(address_);
  ASSERT_TRUE(waitUntil([&] { return ups_.load() == 1; }));
  std::future<void> first = drain(std::chrono::seconds(60));
  std::future<void> second = drain(Duration::zero());
  ASSERT_TRUE(ready(second));
  ASSERT_TRUE(ready(first));
  EXPECT_EQ(connectionCount(), 0u);
}

TEST_P(TcpServerDrainTest, RefusesNewConnectionsAfterDrain) {
  startServer();
  std::future<void> done = drain(std::chrono::seconds(30));
  ASSERT_TRUE(ready(done));
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(fd);
  int rc;
  do {
    rc = ::connect(fd.get(), address_.sockAddr(), address_.sockLen());
  } while (rc != 0 && errno == EINTR);
  EXPECT_NE(rc, 0);
  EXPECT_EQ(errno, ECONNREFUSED);
}

TEST_P(TcpServerDrainTest, DestroyedWhileDraining) {
  startServer([](const TcpConnectionPtr&) {});
  BlockingClient client(address_);
  ASSERT_TRUE(waitUntil([&] { return ups_.load() == 1; }));
  auto ran = std::make_shared<std::atomic<bool>>(false);
  runSync(loop_, [&] { server_->drain(std::chrono::seconds(60), [ran] { ran->store(true); }); });
  runSync(loop_, [&] { server_.reset(); });
  bool eof = false;
  (void)client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);  // torn down with the server
  EXPECT_FALSE(ran->load());
}

std::string paramName(const ::testing::TestParamInfo<Param>& info) {
  static const char* const kThreads[] = {"NoThreads", "PerLoop", "HandOver"};
  return std::string(pollerKindName(std::get<0>(info.param))) +
         kThreads[static_cast<int>(std::get<1>(info.param))];
}

INSTANTIATE_TEST_SUITE_P(
    Backends, TcpServerDrainTest,
    ::testing::Combine(::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                       ::testing::Values(Threads::kNone, Threads::kPerLoop, Threads::kHandOver)),
    paramName);

}  // namespace
}  // namespace libnet
