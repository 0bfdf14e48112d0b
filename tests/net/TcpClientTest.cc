// TcpClient + Connector against a TcpServer on loopback, on every backend.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/Socket.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;
using test::runSync;
using test::waitUntil;

// A loopback port that nothing listens on right now.
uint16_t unusedPort() {
  Socket socket = Socket::createNonblocking(AF_INET);
  socket.bindAddress(InetAddress(0, true));
  return Socket::localAddress(socket.fd()).port();
}

// A loopback port that refuses connections for as long as `holder` lives:
// bound, so that no one else can take the port, but not listening, so that
// the kernel answers a SYN with a reset.
struct RefusingPort {
  RefusingPort() : holder(Socket::createNonblocking(AF_INET)) {
    holder.bindAddress(InetAddress(0, true));
    address = Socket::localAddress(holder.fd());
  }
  Socket holder;
  SocketAddress address;
};

// Waits for `period` through `loop`'s own timers (no sleep), bounded by kWait.
bool letTimePass(EventLoop* loop, Duration period) {
  auto later = std::make_shared<std::promise<void>>();
  loop->runAfter(period, [later] { later->set_value(); });
  return later->get_future().wait_for(test::kWait) == std::future_status::ready;
}

class TcpClientTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "client", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    if (loop_ == nullptr) return;  // skipped
    runSync(loop_, [&] {
      client_.reset();
      server_.reset();
    });
    thread_.reset();
  }

  void startServer(const SocketAddress& address) {
    runSync(loop_, [&] {
      server_ = std::make_unique<TcpServer>(loop_, address, "echo");
      server_->setMessageCallback(
          [](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) { conn->send(buf); });
      server_->setConnectionCallback([this](const TcpConnectionPtr& conn) {
        if (!conn->connected()) serverDowns_.fetch_add(1);
      });
      server_->start();
    });
  }

  void stopServer() {
    runSync(loop_, [&] { server_.reset(); });
  }

  void makeClient(const SocketAddress& address, bool retry) {
    runSync(loop_, [&] {
      client_ = std::make_unique<TcpClient>(
          loop_, address, "client",
          TcpClient::Options{.retry = retry, .initialRetryDelay = 10ms, .maxRetryDelay = 100ms});
      client_->setConnectionCallback([this](const TcpConnectionPtr& conn) {
        if (conn->connected()) {
          ups_.fetch_add(1);
          conn->send("hello");
        } else {
          downs_.fetch_add(1);
        }
      });
      client_->setMessageCallback([this](const TcpConnectionPtr&, Buffer* buf, Timestamp) {
        std::lock_guard lock(mutex_);
        received_ += buf->retrieveAllAsString();
      });
    });
  }

  // Records every connect error the client reports, with the attempt count
  // seen at that moment; with stopOnError the callback stops the client.
  void recordConnectErrors(bool stopOnError) {
    runSync(loop_, [&] {
      client_->setConnectErrorCallback([this, stopOnError](int error) {
        if (!loop_->isInLoopThread()) offLoopThread_ = true;
        {
          std::lock_guard lock(mutex_);
          errors_.push_back(error);
          attemptsAtError_.push_back(client_->connectAttempts());
        }
        if (stopOnError) client_->stop();
      });
    });
  }

  std::string received() {
    std::lock_guard lock(mutex_);
    return received_;
  }

  std::vector<int> errors() {
    std::lock_guard lock(mutex_);
    return errors_;
  }

  std::vector<int> attemptsAtError() {
    std::lock_guard lock(mutex_);
    return attemptsAtError_;
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  std::unique_ptr<TcpClient> client_;
  std::atomic<int> ups_{0};
  std::atomic<int> downs_{0};
  std::atomic<int> serverDowns_{0};
  std::atomic<bool> offLoopThread_{false};
  std::mutex mutex_;
  std::string received_;
  std::vector<int> errors_;
  std::vector<int> attemptsAtError_;
};

TEST_P(TcpClientTest, ConnectsEchoesAndDisconnects) {
  startServer(InetAddress(0, true));
  const SocketAddress address = runSync(loop_, [&] { return server_->listenAddress(); });
  makeClient(address, false);
  client_->connect();
  ASSERT_TRUE(waitUntil([&] { return received() == "hello"; })) << received();
  EXPECT_EQ(ups_.load(), 1);
  ASSERT_NE(client_->connection(), nullptr);
  EXPECT_EQ(client_->connection()->peerAddress(), address);
  client_->disconnect();
  // Our FIN reaches the server, which closes; then we see the close too.
  EXPECT_TRUE(waitUntil([&] { return serverDowns_.load() == 1; }));
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
  EXPECT_EQ(client_->connection(), nullptr);
  EXPECT_EQ(ups_.load(), 1);  // no reconnect without Options::retry
}

// Configuration errors throw at construction; a callback set once connect()
// has been called is refused, not silently missed by a connection already
// being made.
TEST_P(TcpClientTest, BadRetryDelaysThrowAndCallbacksAfterConnectAreRefused) {
  runSync(loop_, [&] {
    const InetAddress nowhere(0, true);  // port 0: every attempt fails
    EXPECT_THROW(TcpClient(loop_, nowhere, "bad", {.initialRetryDelay = 0ms}),
                 std::invalid_argument);
    EXPECT_THROW(TcpClient(loop_, nowhere, "bad", {.initialRetryDelay = 2s, .maxRetryDelay = 1s}),
                 std::invalid_argument);
    TcpClient client(loop_, nowhere, "late");
    EXPECT_NO_THROW(client.setConnectionCallback(nullptr));
    client.connect();
    EXPECT_THROW(client.setConnectionCallback(nullptr), std::logic_error);
    EXPECT_THROW(client.setMessageCallback(nullptr), std::logic_error);
    EXPECT_THROW(client.setWriteCompleteCallback(nullptr), std::logic_error);
    EXPECT_THROW(client.setConnectErrorCallback(nullptr), std::logic_error);
    client.stop();
  });
}

TEST_P(TcpClientTest, RetriesUntilTheServerAppears) {
  const InetAddress address("127.0.0.1", unusedPort());
  makeClient(address, false);
  client_->connect();
  // Refused a few times, with backoff.
  ASSERT_TRUE(waitUntil([&] { return client_->connectAttempts() >= 3; }));
  EXPECT_EQ(ups_.load(), 0);
  startServer(address);
  EXPECT_TRUE(waitUntil([&] { return received() == "hello"; })) << received();
  EXPECT_EQ(ups_.load(), 1);
}

TEST_P(TcpClientTest, ReconnectsAfterTheServerRestarts) {
  startServer(InetAddress(0, true));
  const SocketAddress address = runSync(loop_, [&] { return server_->listenAddress(); });
  makeClient(address, true);
  client_->connect();
  ASSERT_TRUE(waitUntil([&] { return received() == "hello"; }));
  stopServer();  // closes our connection
  ASSERT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
  const int attemptsWhileDown = client_->connectAttempts();
  // Refused while the server is gone: the client keeps trying.
  ASSERT_TRUE(waitUntil([&] { return client_->connectAttempts() >= attemptsWhileDown + 2; }));
  startServer(address);
  EXPECT_TRUE(waitUntil([&] { return ups_.load() == 2; }));
  EXPECT_TRUE(waitUntil([&] { return received() == "hellohello"; })) << received();
}

TEST_P(TcpClientTest, StopEndsRetrying) {
  const InetAddress address("127.0.0.1", unusedPort());
  makeClient(address, false);
  client_->connect();
  ASSERT_TRUE(waitUntil([&] { return client_->connectAttempts() >= 2; }));
  client_->stop();
  // stop() is queued to the loop; after this barrier no retry is pending.
  const int attempts = runSync(loop_, [&] { return client_->connectAttempts(); });
  // A retry timer would fire within 100 ms; give it several periods through
  // the loop itself (timers, not sleeps) and check nothing more happened.
  ASSERT_TRUE(letTimePass(loop_, 400ms));
  EXPECT_EQ(client_->connectAttempts(), attempts);
  EXPECT_EQ(ups_.load(), 0);
}

TEST_P(TcpClientTest, DestroyingAConnectedClientClosesItsConnection) {
  startServer(InetAddress(0, true));
  const SocketAddress address = runSync(loop_, [&] { return server_->listenAddress(); });
  makeClient(address, true);
  client_->connect();
  ASSERT_TRUE(waitUntil([&] { return received() == "hello"; }));
  runSync(loop_, [&] { client_.reset(); });
  EXPECT_TRUE(waitUntil([&] { return serverDowns_.load() == 1; }));
  EXPECT_EQ(downs_.load(), 1);
}

TEST_P(TcpClientTest, DestroyedAfterItsLoopStoppedWithTheConnectionOpen) {
  startServer(InetAddress(0, true));
  const SocketAddress address = runSync(loop_, [&] { return server_->listenAddress(); });
  {
    EventLoop loop(GetParam());  // on the test thread
    auto client = std::make_unique<TcpClient>(&loop, address, "stopped-loop");
    bool up = false;
    client->setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (conn->connected()) {
        up = true;
        loop.quit();
      }
    });
    loop.runAfter(test::kWait, [&] { loop.quit(); });
    client->connect();
    loop.loop();
    ASSERT_TRUE(up);
    // The loop no longer runs: the close the destructor queues must still
    // happen (when the loop is destroyed) without a registered Channel dying.
    client.reset();
  }
  EXPECT_TRUE(waitUntil([&] { return serverDowns_.load() == 1; }));
}

TEST_P(TcpClientTest, ReportsEveryRefusedAttemptAndKeepsRetrying) {
  auto refusing = std::make_unique<RefusingPort>();
  const SocketAddress address = refusing->address;
  makeClient(address, false);
  recordConnectErrors(false);
  client_->connect();
  ASSERT_TRUE(waitUntil([&] { return errors().size() >= 3; })) << errors().size();
  for (const int error : errors()) {
    EXPECT_EQ(error, ECONNREFUSED) << std::strerror(error);
  }
  EXPECT_FALSE(offLoopThread_.load());
  // Each report comes before the next attempt is made: the n-th report saw
  // exactly n attempts.
  const std::vector<int> attempts = attemptsAtError();
  for (size_t i = 0; i < attempts.size(); ++i) {
    EXPECT_EQ(attempts[i], static_cast<int>(i + 1));
  }
  EXPECT_EQ(ups_.load(), 0);
  // Being told does not end the retrying: a server that appears is reached.
  refusing.reset();
  startServer(address);
  EXPECT_TRUE(waitUntil([&] { return received() == "hello"; })) << received();
  EXPECT_EQ(ups_.load(), 1);
}

TEST_P(TcpClientTest, StopFromTheConnectErrorCallbackEndsTheAttempts) {
  const RefusingPort refusing;
  makeClient(refusing.address, false);
  recordConnectErrors(true);
  const int fdsBefore = test::openFdCount();
  client_->connect();
  ASSERT_TRUE(waitUntil([&] { return !errors().empty(); }));
  // The retry delay is 10 ms: a retry that survived stop() would show up
  // many times over in this window.
  ASSERT_TRUE(letTimePass(loop_, 300ms));
  EXPECT_EQ(client_->connectAttempts(), 1);
  EXPECT_EQ(errors(), std::vector<int>{ECONNREFUSED});
  EXPECT_EQ(ups_.load(), 0);
  // The refused attempt's socket was closed.
  EXPECT_EQ(test::openFdCount(), fdsBefore);
}

TEST_P(TcpClientTest, PermanentConnectFailureIsReportedOnceAndEndsTheAttempts) {
  {
    // Needs IPv6 in the kernel; without it this would test EAFNOSUPPORT.
    const int probe = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) GTEST_SKIP() << "no IPv6 sockets here: " << std::strerror(errno);
    ::close(probe);
  }
  // Linux refuses a link-local destination without a scope (no interface to
  // send on) with EINVAL, straight from connect(): retrying cannot help.
  makeClient(InetAddress("fe80::1", 9), false);
  recordConnectErrors(false);
  const int fdsBefore = test::openFdCount();
  client_->connect();
  ASSERT_TRUE(waitUntil([&] { return !errors().empty(); }));
  ASSERT_TRUE(letTimePass(loop_, 300ms));
  EXPECT_EQ(errors(), std::vector<int>{EINVAL});
  EXPECT_EQ(client_->connectAttempts(), 1);
  EXPECT_EQ(test::openFdCount(), fdsBefore);
}

INSTANTIATE_TEST_SUITE_P(Backends, TcpClientTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
