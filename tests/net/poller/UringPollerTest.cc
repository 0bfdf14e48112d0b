// The io_uring backend under stress (net/poller/UringPoller, and the
// completion path of net/TcpConnection and net/Acceptor on io_uring loops):
// a buffer ring so small that multishot recv keeps ending in -ENOBUFS, closes
// with a recv and a send in flight, 1000 connections over two I/O loops, and
// a large send to a slow reader. Every byte is checked. Skipped where
// io_uring cannot run (UringProbe::result()).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <liburing.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/EventLoopThreadPool.h"
#include "net/LoopInternals.h"
#include "net/Poller.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/poller/BufferRing.h"
#include "net/poller/UringPoller.h"
#include "net/poller/UringProbe.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::randomBytes;
using test::runSync;
using test::waitUntil;

// Skips the test unless io_uring runs here (and is not overridden away).
class UringTestBase {
 protected:
  // Returns why io_uring cannot be tested here, or "" if it can.
  static std::string unavailableReason() {
    const UringProbe::Result& probe = UringProbe::result();
    if (!probe.ok) return "io_uring unavailable here: " + probe.detail;
    if (EventLoop::resolvePollerKind(PollerKind::kIoUring) != PollerKind::kIoUring) {
      return "LIBNET_POLLER overrides the backend in this process";
    }
    return {};
  }
};

// An echo server on an io_uring loop thread (plus `ioThreads` I/O loops),
// its rings built with `ring`.
class UringEchoServer {
 public:
  using Configure = std::function<void(TcpServer&)>;

  explicit UringEchoServer(int ioThreads = 0, const Configure& configure = {},
                           const IoUringOptions& ring = {})
      : UringEchoServer(TcpServer::Options{.threads = ioThreads}, configure, ring) {}

  // The server is made with `options`; `configure` sets its callbacks.
  UringEchoServer(const TcpServer::Options& options, const Configure& configure,
                  const IoUringOptions& ring = {}) {
    thread_ = std::make_unique<EventLoopThread>(
        nullptr, "uring-server", EventLoopOptions{.poller = PollerKind::kIoUring, .ioUring = ring});
    loop_ = thread_->startLoop();
    runSync(loop_, [&] {
      server_ = std::make_unique<TcpServer>(loop_, InetAddress(0, true), "uring-test", options);
      server_->setMessageCallback([this](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
        bytesIn_.fetch_add(buf->readableBytes());
        conn->send(buf);
      });
      server_->setConnectionCallback([this](const TcpConnectionPtr& conn) {
        (conn->connected() ? ups_ : downs_).fetch_add(1);
      });
      if (configure) configure(*server_);
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  ~UringEchoServer() {
    try {
      if (server_) runSync(loop_, [&] { server_.reset(); });
    } catch (const std::exception& e) {
      ADD_FAILURE() << "tearing the server down: " << e.what();
    }
    thread_.reset();
  }

  UringEchoServer(const UringEchoServer&) = delete;
  UringEchoServer& operator=(const UringEchoServer&) = delete;

  EventLoop* loop() const { return loop_; }
  const SocketAddress& address() const { return address_; }
  size_t connectionCount() {
    return runSync(loop_, [&] { return server_->connectionCount(); });
  }
  // Registered completion owners on the accepting loop (its acceptor and the
  // connections served there).
  size_t handlerCount() {
    return runSync(loop_, [&] { return LoopInternals::poller(*loop_).ownersInFlight(); });
  }
  // Connections handed to the I/O loops ring to ring, over all of them.
  uint64_t ringHandOvers() {
    return runSync(loop_, [&] {
      uint64_t total = 0;
      for (const TcpServer::LoopStats& loop : server_->loopStats()) total += loop.ringHandOvers;
      return total;
    });
  }

  std::atomic<int> ups_{0};
  std::atomic<int> downs_{0};
  std::atomic<size_t> bytesIn_{0};

 private:
  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  SocketAddress address_;
};

class UringPollerTest : public ::testing::Test, protected UringTestBase {
 protected:
  void SetUp() override {
    if (const std::string why = unavailableReason(); !why.empty()) GTEST_SKIP() << why;
  }
};

// ---- a. a two-buffer ring: -ENOBUFS all the time, no byte lost or moved ----

// `clients` clients, each on its own thread, send `bytes` random bytes at once
// and read the echo; returns per client what went wrong ("" if nothing).
std::vector<std::string> echoFromThreads(const SocketAddress& server, int clients, size_t bytes) {
  std::vector<std::string> failures(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      std::string& failure = failures[static_cast<size_t>(i)];
      try {
        BlockingClient client(server);
        const std::string payload = randomBytes(bytes, 1000 + static_cast<uint32_t>(i));
        if (!client.sendAll(payload)) {
          failure = "send failed";
          return;
        }
        const std::string got = client.recvExactly(bytes);
        if (got.size() != bytes) {
          failure = "got " + std::to_string(got.size()) + " of " + std::to_string(bytes);
        } else if (got != payload) {
          const auto diff = std::mismatch(got.begin(), got.end(), payload.begin());
          failure = "bytes differ from offset " + std::to_string(diff.first - got.begin());
        }
      } catch (const std::exception& e) {
        failure = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return failures;
}

// echoFromThreads() against `server`, then: every client got its bytes back,
// the server saw all of them, and every connection went down again.
void expectEchoFromThreads(UringEchoServer& server, int clients, size_t bytes) {
  const std::vector<std::string> failures = echoFromThreads(server.address(), clients, bytes);
  for (int i = 0; i < clients; ++i) EXPECT_EQ(failures[i], "") << "client " << i;
  EXPECT_EQ(server.bytesIn_.load(), static_cast<size_t>(clients) * bytes);
  EXPECT_TRUE(waitUntil([&] { return server.downs_.load() == clients; }));
  EXPECT_TRUE(waitUntil([&] { return server.connectionCount() == 0; }));
}

// With incremental buffer consumption (where the kernel has it) and without.
class UringTinyRingTest : public UringPollerTest, public ::testing::WithParamInterface<bool> {};

TEST_P(UringTinyRingTest, TinyBufferRingLosesAndReordersNothing) {
  constexpr int kClients = 20;
  constexpr size_t kBytes = 256 * 1024;
  IoUringOptions tiny;
  tiny.bufferCount = 2;
  tiny.bufferSize = 512;
  tiny.initialBufferCount = 2;
  tiny.incrementalBuffers = GetParam();
  UringEchoServer server(0, {}, tiny);
  ASSERT_EQ(server.loop()->pollerKind(), PollerKind::kIoUring);
  const auto [count, size] = runSync(server.loop(), [&] {
    const BufferRing& ring =
        dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop())).context().buffers();
    return std::pair{ring.capacity(), ring.bufferSize()};
  });
  ASSERT_EQ(count, 2u) << "the loop's ring was not built from the configuration";
  if (!GetParam()) {
    EXPECT_FALSE(runSync(server.loop(), [&] {
      return dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop()))
          .context()
          .buffers()
          .incremental();
    }));
  }
  ASSERT_EQ(size, 512u);

  // Each client on its own thread, so that many receives compete for the two
  // buffers at once and the multishot recv keeps running the ring dry.
  expectEchoFromThreads(server, kClients, kBytes);
}

INSTANTIATE_TEST_SUITE_P(Consumption, UringTinyRingTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "IncrementalIfAvailable" : "WholeBuffers";
                         });

// ---- b. closing with a recv and a send in flight frees everything ----

enum class Closer { kPeerReset, kServerForceClose };

std::string closerName(const ::testing::TestParamInfo<Closer>& info) {
  return info.param == Closer::kPeerReset ? "PeerReset" : "ServerForceClose";
}

class UringCloseTest : public ::testing::TestWithParam<Closer>, protected UringTestBase {
 protected:
  void SetUp() override {
    if (const std::string why = unavailableReason(); !why.empty()) GTEST_SKIP() << why;
  }
};

TEST_P(UringCloseTest, CloseWithRecvAndSendInFlightFreesEverything) {
  constexpr size_t kBytes = 4 * 1024 * 1024;
  constexpr int kSmallBuffer = 16 * 1024;
  std::promise<std::weak_ptr<TcpConnection>> connected;
  UringEchoServer server(0, [&](TcpServer& s) {
    s.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (conn->connected()) {
        server.ups_.fetch_add(1);
        // A small send buffer on our side too, so most of the echo has to
        // wait in the connection's output buffer behind a send in flight.
        ::setsockopt(conn->fd(), SOL_SOCKET, SO_SNDBUF, &kSmallBuffer, sizeof kSmallBuffer);
        connected.set_value(conn);
      } else {
        server.downs_.fetch_add(1);
      }
    });
  });
  const int baselineFds = test::openFdCount();
  const size_t baselineHandlers = server.handlerCount();
  std::weak_ptr<TcpConnection> weak;
  {
    BlockingClient client(server.address(), kSmallBuffer);
    auto future = connected.get_future();
    ASSERT_EQ(future.wait_for(test::kWait), std::future_status::ready);
    weak = future.get();
    // Not reading: the echo piles up on the server.
    const std::string payload = randomBytes(kBytes, 77);
    ASSERT_TRUE(client.sendAll(payload));
    ASSERT_TRUE(waitUntil([&] { return server.bytesIn_.load() == kBytes; }))
        << server.bytesIn_.load() << " of " << kBytes << " bytes reached the server";
    {
      TcpConnectionPtr conn = weak.lock();
      ASSERT_TRUE(conn);
      // The echo is queued (a send in flight, more behind it); the
      // multishot recv stays armed while the connection reads.
      const auto [queued, reading, onRing] = runSync(server.loop(), [&] {
        return std::tuple{conn->queuedOutputBytes(), conn->isReading(),
                          conn->loop()->pollerKind() == PollerKind::kIoUring};
      });
      ASSERT_TRUE(onRing);
      ASSERT_GT(queued, 0u) << "no output queued behind a send in flight";
      ASSERT_TRUE(reading);
      EXPECT_EQ(server.handlerCount(), baselineHandlers + 1);
      if (GetParam() == Closer::kServerForceClose) conn->forceClose();
    }
    if (GetParam() == Closer::kPeerReset) {
      client.resetConnection();
    } else {
      // Whatever the server sent before it closed arrives in order, then the
      // end of the stream (or a reset).
      std::string got;
      char buf[65536];
      for (;;) {
        const ssize_t n = ::recv(client.fd(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          EXPECT_TRUE(n == 0 || errno == ECONNRESET) << "recv: " << std::strerror(errno);
          break;
        }
        got.append(buf, static_cast<size_t>(n));
      }
      EXPECT_LT(got.size(), kBytes) << "forceClose() did not drop the queued output";
      EXPECT_TRUE(got == payload.substr(0, got.size())) << "echo out of order before the close";
      client.close();
    }
  }
  EXPECT_TRUE(waitUntil([&] { return server.downs_.load() == 1; })) << "down callback not run";
  EXPECT_TRUE(waitUntil([&] { return server.connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return weak.expired(); }))
      << "the connection object is still alive (an op in flight never completed?)";
  EXPECT_TRUE(waitUntil([&] { return server.handlerCount() == baselineHandlers; }))
      << server.handlerCount() << " completion handlers, " << baselineHandlers << " before";
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baselineFds; }))
      << test::openFdCount() << " fds open, " << baselineFds << " before";
}

INSTANTIATE_TEST_SUITE_P(Closers, UringCloseTest,
                         ::testing::Values(Closer::kPeerReset, Closer::kServerForceClose),
                         closerName);

// ---- c. 1000 concurrent connections on two io_uring I/O loops ----

class UringManyConnectionsTest : public UringPollerTest {
 protected:
  static constexpr rlim_t kWanted = 4096;
  static constexpr rlim_t kNeeded = 2500;  // 1000 clients + 1000 server sides + slack

  void SetUp() override {
    UringPollerTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved_), 0);
    restore_ = true;
    if (saved_.rlim_cur < kWanted) {
      rlimit raised = saved_;
      raised.rlim_cur = std::min(saved_.rlim_max, kWanted);
      ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &raised), 0);
    }
    rlimit now{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
    if (now.rlim_cur < kNeeded) {
      GTEST_SKIP() << "RLIMIT_NOFILE is " << now.rlim_cur << " (hard " << now.rlim_max
                   << "); 1000 connections need " << kNeeded;
    }
  }
  void TearDown() override {
    if (restore_) ::setrlimit(RLIMIT_NOFILE, &saved_);
  }

  rlimit saved_{};
  bool restore_ = false;
};

TEST_F(UringManyConnectionsTest, ThousandConcurrentConnectionsOnTwoIoLoopsEchoEveryByte) {
  constexpr int kConnections = 1000;
  std::mutex mutex;
  std::map<EventLoop*, int> perLoop;
  int notOnRing = 0;
  UringEchoServer server(2, [&](TcpServer& s) {
    s.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) {
        server.downs_.fetch_add(1);
        return;
      }
      server.ups_.fetch_add(1);
      std::lock_guard lock(mutex);
      ++perLoop[conn->loop()];
      if (conn->loop()->pollerKind() != PollerKind::kIoUring) ++notOnRing;
    });
  });

  // Connect all, then send on all, then read from all: every connection is
  // open at once, and one thread drives them without a thread each.
  std::vector<std::unique_ptr<BlockingClient>> clients;
  std::vector<std::string> payloads;
  clients.reserve(kConnections);
  for (int i = 0; i < kConnections; ++i) {
    ASSERT_NO_THROW(clients.push_back(std::make_unique<BlockingClient>(server.address())))
        << "connection " << i;
    payloads.push_back(randomBytes(1024 + static_cast<size_t>(i) * 7919 % (7 * 1024 + 1),
                                   5000 + static_cast<uint32_t>(i)));
  }
  ASSERT_TRUE(waitUntil([&] { return server.connectionCount() == kConnections; }))
      << server.connectionCount() << " of " << kConnections << " connections accepted";
  for (int i = 0; i < kConnections; ++i) {
    ASSERT_TRUE(clients[i]->sendAll(payloads[i])) << "connection " << i;
  }
  for (int i = 0; i < kConnections; ++i) {
    ASSERT_TRUE(clients[i]->recvExactly(payloads[i].size()) == payloads[i]) << "connection " << i;
  }
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(notOnRing, 0);
    EXPECT_EQ(perLoop.size(), 2u);
    EXPECT_EQ(perLoop.count(server.loop()), 0u) << "a connection was served on the accept loop";
    // One listening socket per loop (the default AcceptMode): the kernel
    // spreads connections by a hash of their addresses, about evenly.
    for (const auto& [loop, n] : perLoop) EXPECT_GE(n, kConnections / 4);
  }
  clients.clear();
  EXPECT_TRUE(waitUntil([&] { return server.downs_.load() == kConnections; }));
  EXPECT_TRUE(waitUntil([&] { return server.connectionCount() == 0; }));
}

// ---- d. a large send to a slow reader ----

TEST_F(UringPollerTest, LargeSendToSlowReaderKeepsOrderAndFiresHighWaterMarkOnce) {
  constexpr size_t kSize = 8 * 1024 * 1024;
  constexpr size_t kMark = 1024 * 1024;
  constexpr size_t kChunk = 4096;
  const std::string payload = randomBytes(kSize, 8);
  std::atomic<int> highWaterMarks{0};
  std::atomic<size_t> highWaterSize{0};
  std::atomic<int> writeCompletes{0};
  std::atomic<bool> onRing{false};
  UringEchoServer server(0, [&](TcpServer& s) {
    s.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      onRing = conn->loop()->pollerKind() == PollerKind::kIoUring;
      conn->setHighWaterMarkCallback(
          [&](const TcpConnectionPtr&, size_t size) {
            highWaterMarks.fetch_add(1);
            highWaterSize = size;
          },
          kMark);
      conn->send(payload);
    });
    s.setWriteCompleteCallback([&](const TcpConnectionPtr&) { writeCompletes.fetch_add(1); });
  });
  BlockingClient client(server.address(), 64 * 1024);
  // Small reads, each checked where it lands.
  size_t received = 0;
  char buf[kChunk];
  while (received < kSize) {
    const ssize_t n = ::recv(client.fd(), buf, std::min(kChunk, kSize - received), 0);
    if (n < 0 && errno == EINTR) continue;
    ASSERT_GT(n, 0) << "after " << received << " bytes: " << (n < 0 ? std::strerror(errno) : "EOF");
    ASSERT_TRUE(std::equal(buf, buf + n, payload.begin() + static_cast<ptrdiff_t>(received)))
        << "bytes out of order in [" << received << ", " << received + static_cast<size_t>(n)
        << ")";
    received += static_cast<size_t>(n);
  }
  EXPECT_TRUE(onRing.load());
  EXPECT_TRUE(waitUntil([&] { return writeCompletes.load() >= 1; }));
  runSync(server.loop(), [] {});  // anything still queued on the loop has run
  EXPECT_EQ(highWaterMarks.load(), 1);
  EXPECT_GE(highWaterSize.load(), kMark);
  EXPECT_EQ(writeCompletes.load(), 1);
}

// ---- e. received bytes are handed over in place; peers that do not read lose nothing ----

TEST_F(UringPollerTest, ReceivedBytesAreHandedOverInPlaceAndSlowReadersLoseNothing) {
  constexpr int kStuck = 12;
  constexpr size_t kStuckBytes = 256 * 1024;
  IoUringOptions small;
  small.bufferCount = 8;
  small.bufferSize = 4096;
  small.initialBufferCount = 8;

  std::atomic<int> inPlace{0};
  std::atomic<int> copied{0};
  UringEchoServer server(
      0,
      [&](TcpServer& s) {
        s.setMessageCallback([&](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
          const BufferRing& ring =
              dynamic_cast<UringPoller&>(LoopInternals::poller(*conn->loop())).context().buffers();
          const std::string_view all = ring.data(0, size_t{ring.capacity()} * ring.bufferSize());
          const bool inRing = buf->peek() >= all.data() && buf->peek() < all.data() + all.size();
          (inRing ? inPlace : copied).fetch_add(1);
          server.bytesIn_.fetch_add(buf->readableBytes());
          conn->send(buf);
        });
        // A small send buffer, so that echoes to a peer that does not read get
        // stuck early, in sends that stay in flight.
        s.setConnectionCallback([](const TcpConnectionPtr& conn) {
          const int sndbuf = 4096;
          if (conn->connected())
            ::setsockopt(conn->fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        });
      },
      small);
  auto lent = [&] {
    return runSync(server.loop(), [&] {
      const BufferRing& ring =
          dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop())).context().buffers();
      return std::pair{ring.lent(), ring.provided()};
    });
  };

  // Peers that send and never read: their echoes sit in sends that cannot
  // complete, some of them still viewing ring buffers.
  std::vector<std::unique_ptr<BlockingClient>> stuck;
  std::vector<std::string> payloads;
  for (int i = 0; i < kStuck; ++i) {
    stuck.push_back(std::make_unique<BlockingClient>(server.address(), 4096));
    payloads.push_back(randomBytes(kStuckBytes, 700 + static_cast<uint32_t>(i)));
    ASSERT_TRUE(stuck.back()->sendAll(payloads.back())) << "stuck client " << i;
  }
  ASSERT_TRUE(waitUntil([&] { return server.bytesIn_.load() == kStuck * kStuckBytes; }))
      << server.bytesIn_.load() << " of " << kStuck * kStuckBytes << " bytes received";
  const auto [lentNow, provided] = lent();
  EXPECT_LE(lentNow, provided / 2) << "views held by stuck sends exceed half the ring";

  // Everybody else is still served.
  {
    BlockingClient fresh(server.address());
    const std::string payload = randomBytes(100 * 1000, 99);
    ASSERT_TRUE(fresh.sendAll(payload));
    EXPECT_TRUE(fresh.recvExactly(payload.size()) == payload);
  }
  EXPECT_GT(inPlace.load(), 0) << "no callback was handed the bytes in place";

  // The stuck peers read at last: every byte, in order.
  for (int i = 0; i < kStuck; ++i) {
    EXPECT_TRUE(stuck[i]->recvExactly(kStuckBytes) == payloads[i]) << "stuck client " << i;
  }
  stuck.clear();
  EXPECT_TRUE(waitUntil([&] { return server.connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return lent().first == 0; })) << "ring buffers never came back";
}

// ---- f. the ring lends at most half its provided buffers ----

TEST_F(UringPollerTest, BufferRingLendsAtMostHalfAndGrowsByDoubling) {
  io_uring ring{};
  ASSERT_EQ(io_uring_queue_init(8, &ring, 0), 0);
  {
    BufferRing buffers(&ring, 5, 16, 256, 4);
    EXPECT_EQ(buffers.provided(), 4u);
    std::vector<Buffer> views;
    views.reserve(16);
    uint16_t id = 0;
    while (buffers.canLend()) {
      views.emplace_back(0);
      buffers.lend(&views.back(), BufferRing::Received{id, buffers.data(id, 10)});
      ++id;
    }
    EXPECT_EQ(buffers.lent(), 2u);                          // half of 4
    EXPECT_EQ(views[1].peek(), buffers.data(1, 0).data());  // in place
    views[0].releaseBorrowed();
    EXPECT_EQ(buffers.lent(), 1u);
    EXPECT_TRUE(buffers.canLend());
    EXPECT_TRUE(buffers.grow());
    EXPECT_EQ(buffers.provided(), 8u);
    EXPECT_TRUE(buffers.grow());
    EXPECT_EQ(buffers.provided(), 16u);
    EXPECT_FALSE(buffers.grow()) << "grew past its capacity";
    views.clear();  // a view's destructor hands its buffer back
    EXPECT_EQ(buffers.lent(), 0u);
  }
  io_uring_queue_exit(&ring);
}

// ---- e2. a burst grows the buffer ring; quiet gives the memory back ----

// Many connections receiving at once take more buffers than the ring starts
// with (ENOBUFS, so it grows); once they are gone and a second or so has
// passed quietly, the ring is back to its initial size and the pages of the
// buffers it no longer uses are handed back (resident bytes, from mincore).
TEST_F(UringPollerTest, ARingGrownByABurstShrinksAndGivesItsPagesBack) {
  IoUringOptions config;
  config.initialBufferCount = 4;
  config.bufferCount = 256;
  UringEchoServer server(0, {}, config);
  const auto ring = [&] {
    return runSync(server.loop(), [&] {
      BufferRing& buffers =
          dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop())).context().buffers();
      const size_t all = static_cast<size_t>(buffers.capacity()) * buffers.bufferSize();
      const auto resident =
          static_cast<size_t>(test::residentBytes(buffers.data(0, all).data(), all));
      return std::tuple{buffers.provided(), buffers.initial(), resident, buffers.bufferSize()};
    });
  };
  expectEchoFromThreads(server, 24, 512 * 1024);
  const auto [grown, initial, residentGrown, size] = ring();
  ASSERT_EQ(initial, 4u);
  EXPECT_GT(grown, initial) << "the burst did not grow the ring; nothing to shrink";
  EXPECT_GT(residentGrown, static_cast<size_t>(initial) * size);
  // Bounded: the ring is weighed about once a second while it is grown.
  EXPECT_TRUE(waitUntil([&] { return std::get<0>(ring()) == initial; }))
      << std::get<0>(ring()) << " buffers still in circulation";
  EXPECT_TRUE(waitUntil([&] { return std::get<2>(ring()) <= static_cast<size_t>(initial) * size; }))
      << std::get<2>(ring()) << " bytes of ring buffers still resident";
  // And it still works, growing again when needed.
  for (const std::string& failure : echoFromThreads(server.address(), 16, 256 * 1024)) {
    EXPECT_EQ(failure, "");
  }
}

// ---- e2b. peers with a backlog share one turn's buffers; the ring stays small ----

// Sixteen peers whose 256 KiB each wait in their sockets when the server
// starts reading them, all in the same loop turn. A multishot recv drained a
// whole socket in one kernel pass, so the first pass wanted 4 MiB of
// provided buffers: every receive that found the ring empty doubled it, to
// its full 2048 buffers (32 MiB, all of it resident once used) in one turn.
// Now a backlogged connection's recv takes its share of the ring's initial
// buffers per turn, the rest waiting in its socket, and the ring grows at
// most once a turn: it stays within four times its start.
TEST_F(UringPollerTest, PeersWithABacklogShareTheRingInsteadOfGrowingIt) {
  constexpr int kPeers = 16;
  constexpr size_t kEach = 256 * 1024;
  IoUringOptions config;
  config.bufferCheckMs = 60 * 1000;     // no shrink while the test looks
  std::vector<TcpConnectionPtr> conns;  // loop thread only
  UringEchoServer server(
      0,
      [&](TcpServer& tcp) {
        tcp.setConnectionCallback([&](const TcpConnectionPtr& conn) {
          if (!conn->connected()) return;
          const int rcvbuf = 1024 * 1024;  // room for all of kEach while nothing reads
          ::setsockopt(conn->fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
          conn->stopRead();
          conns.push_back(conn);
        });
      },
      config);
  std::vector<std::unique_ptr<BlockingClient>> clients;
  std::vector<std::string> payloads;
  for (int i = 0; i < kPeers; ++i) {
    clients.push_back(std::make_unique<BlockingClient>(server.address()));
    payloads.push_back(randomBytes(kEach, 500 + static_cast<uint32_t>(i)));
  }
  ASSERT_TRUE(waitUntil([&] {
    return runSync(server.loop(), [&] { return conns.size(); }) == static_cast<size_t>(kPeers);
  }));
  for (int i = 0; i < kPeers; ++i) ASSERT_TRUE(clients[i]->sendAll(payloads[i]));
  const auto waitingInSockets = [&] {
    return runSync(server.loop(), [&] {
      size_t all = 0;
      for (const TcpConnectionPtr& conn : conns) {
        int n = 0;
        if (::ioctl(conn->fd(), FIONREAD, &n) == 0) all += static_cast<size_t>(n);
      }
      return all;
    });
  };
  ASSERT_TRUE(waitUntil([&] { return waitingInSockets() == kPeers * kEach; }))
      << waitingInSockets() << " of " << kPeers * kEach << " bytes in the server's sockets";
  const uint32_t initial = runSync(server.loop(), [&] {
    return dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop()))
        .context()
        .buffers()
        .provided();
  });

  runSync(server.loop(), [&] {
    for (const TcpConnectionPtr& conn : conns) conn->startRead();
  });
  for (int i = 0; i < kPeers; ++i) {
    EXPECT_TRUE(clients[i]->recvExactly(kEach) == payloads[i]) << "peer " << i;
  }
  const uint32_t provided = runSync(server.loop(), [&] {
    return dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop()))
        .context()
        .buffers()
        .provided();
  });
  EXPECT_LE(provided, 4 * initial);
  runSync(server.loop(), [&] { conns.clear(); });
}

// ---- e3. the ring shrinks while echoes are under way: no received byte lost ----

// The load that once turned received bytes into zeros: clients echo random
// non-zero bytes and check every one, while again and again hundreds of
// peers send 64 KiB each without reading (the ring grows), then reset (it
// shrinks). A shrink that gave back the pages of a buffer the kernel had
// just filled, its completion not yet handled, showed as runs of zeros.
TEST_F(UringPollerTest, ShrinkingUnderEchoTrafficLosesNoReceivedByte) {
  constexpr int kCheckers = 8;
  constexpr int kFlooders = 400;
  constexpr int kCycles = 8;
  constexpr size_t kFlood = 64 * 1024;
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur < 4 * kFlooders) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, 4 * kFlooders);
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  IoUringOptions config;
  config.bufferCheckMs = 5;  // many shrinks, each a chance to lose bytes
  UringEchoServer server(0, {}, config);
  const auto provided = [&] {
    return runSync(server.loop(), [&] {
      return dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop()))
          .context()
          .buffers()
          .provided();
    });
  };
  const uint32_t initial = provided();

  std::atomic<bool> stop{false};
  std::atomic<int> messages{0};
  std::vector<std::string> failures(kCheckers);
  std::vector<std::thread> checkers;
  for (int i = 0; i < kCheckers; ++i) {
    checkers.emplace_back([&, i] {
      std::string& failure = failures[static_cast<size_t>(i)];
      try {
        BlockingClient client(server.address());
        std::mt19937 rng(static_cast<uint32_t>(i));
        while (!stop.load() && failure.empty()) {
          std::string payload = randomBytes(1000 + rng() % 29000, rng());
          for (char& c : payload) c = c == '\0' ? '\1' : c;
          if (!client.sendAll(payload)) {
            failure = "send failed";
            break;
          }
          const std::string got = client.recvExactly(payload.size());
          if (got != payload) {
            failure = "a " + std::to_string(payload.size()) + "-byte echo came back as " +
                      std::to_string(got.size()) + " bytes, first zero at " +
                      std::to_string(static_cast<long>(got.find('\0')));
          }
          messages.fetch_add(1);
        }
      } catch (const std::exception& e) {
        failure = e.what();
      }
    });
  }

  int shrunk = 0;
  const std::string flood = randomBytes(kFlood, 77);
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    std::vector<std::unique_ptr<BlockingClient>> flooders;
    for (int i = 0; i < kFlooders; ++i) {
      flooders.push_back(std::make_unique<BlockingClient>(server.address()));
      ASSERT_TRUE(flooders.back()->sendAll(flood));
    }
    const uint32_t grown = provided();
    for (auto& flooder : flooders) flooder->resetConnection();
    if (grown > initial && waitUntil([&] { return provided() < grown; })) ++shrunk;
  }
  stop.store(true);
  for (std::thread& t : checkers) t.join();
  for (int i = 0; i < kCheckers; ++i) EXPECT_EQ(failures[i], "") << "checker " << i;
  EXPECT_GT(messages.load(), kCheckers);
  EXPECT_GT(shrunk, 0) << "the ring never grew and shrank: the test shows nothing";
}

// ---- f. registered files: a table slot per open socket, reused ----

// The slots of the server loop's registered-file table: its size, and how
// many hold a socket (or one being released).
std::pair<uint32_t, size_t> fileTable(UringEchoServer& server) {
  return runSync(server.loop(), [&] {
    auto& poller = dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop()));
    return std::pair{poller.context().fileSlots(), poller.context().filesRegistered()};
  });
}

bool echoes(BlockingClient& client, size_t size, uint32_t seed) {
  const std::string payload = randomBytes(size, seed);
  return client.sendAll(payload) && client.recvExactly(size) == payload;
}

TEST_F(UringPollerTest, ConnectionsBeyondTheFileTableUsePlainFdsAndSlotsAreReused) {
  IoUringOptions config;
  config.fixedFiles = 2;
  UringEchoServer server(
      0,
      [&](TcpServer& s) {
        s.setMessageCallback([&](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
          if (buf->retrieveAllAsString() == "bye") {
            conn->forceClose();  // only the fd's close: no shutdown() first
          } else {
            server.bytesIn_.fetch_add(1);
            conn->send("ok");
          }
        });
      },
      config);
  const auto roundTrip = [](BlockingClient& client) {
    return client.sendAll("hi") && client.recvExactly(2) == "ok";
  };
  const auto [slots, before] = fileTable(server);
  if (slots == 0) GTEST_SKIP() << "no registered-file table on this kernel";
  ASSERT_EQ(slots, 2u);
  ASSERT_EQ(before, 0u);

  // One at a time, so the first two accepted take the two slots.
  std::vector<std::unique_ptr<BlockingClient>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<BlockingClient>(server.address()));
    ASSERT_TRUE(roundTrip(*clients.back())) << "client " << i;
  }
  EXPECT_EQ(fileTable(server).second, 2u) << "two sockets in the table, two on plain fds";

  // A socket in the table, closed by the server without a shutdown(): its
  // peer must see the end of the stream, so the table lets go of it.
  ASSERT_TRUE(clients[0]->sendAll("bye"));
  bool eof = false;
  EXPECT_EQ(clients[0]->recvUntilEof(&eof), "");
  EXPECT_TRUE(eof) << "the server's close did not reach the peer";
  EXPECT_TRUE(waitUntil([&] { return fileTable(server).second == 1; }))
      << fileTable(server).second << " slots in use after one table connection closed";

  // The freed slot takes the next connection; everyone still echoes.
  clients[0] = std::make_unique<BlockingClient>(server.address());
  ASSERT_TRUE(roundTrip(*clients[0]));
  EXPECT_EQ(fileTable(server).second, 2u) << "the freed slot was not reused";
  for (size_t i = 0; i < clients.size(); ++i) {
    EXPECT_TRUE(roundTrip(*clients[i])) << "client " << i;
  }
  clients.clear();
  EXPECT_TRUE(waitUntil([&] { return server.connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return fileTable(server).second == 0; }))
      << fileTable(server).second << " slots still in use with no connection open";
}

// A table of 64 set from the environment (as a deployment would) and 200
// connections open at once: 64 sit in the table, the rest run on plain fds,
// one INFO line says so, every byte comes back, and nothing is left after.
TEST_F(UringPollerTest, ConnectionsPastASmallTableAreServedOnPlainFds) {
  constexpr int kClients = 200;
  constexpr uint32_t kSlots = 64;
  std::mutex logMutex;
  std::vector<std::string> log;
  Logger::setOutput([&](std::string_view line) {  // before the loop thread starts
    std::lock_guard<std::mutex> lock(logMutex);
    log.emplace_back(line);
  });
  ::setenv("LIBNET_URING_FIXED_FILES", "64", 1);
  const int fdsBefore = test::openFdCount();
  {
    UringEchoServer server;
    ::unsetenv("LIBNET_URING_FIXED_FILES");
    const auto [slots, before] = fileTable(server);
    if (slots == 0) {
      Logger::setOutput({});
      GTEST_SKIP() << "no registered-file table on this kernel";
    }
    ASSERT_EQ(slots, kSlots);
    std::vector<std::unique_ptr<BlockingClient>> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.push_back(std::make_unique<BlockingClient>(server.address()));
      ASSERT_TRUE(echoes(*clients.back(), 1000 + static_cast<size_t>(i), static_cast<uint32_t>(i)))
          << "client " << i;
    }
    EXPECT_EQ(fileTable(server).second, kSlots);
    // All of them again, in reverse, while all are open.
    for (int i = kClients - 1; i >= 0; --i) {
      EXPECT_TRUE(echoes(*clients[static_cast<size_t>(i)], 5000, 7u * static_cast<uint32_t>(i)))
          << "client " << i;
    }
    clients.clear();
    EXPECT_TRUE(waitUntil([&] { return server.connectionCount() == 0; }));
    EXPECT_TRUE(waitUntil([&] { return fileTable(server).second == 0; }))
        << fileTable(server).second << " slots still in use with no connection open";
  }
  Logger::setOutput({});
  EXPECT_EQ(test::openFdCount(), fdsBefore);
  int fullLines = 0;
  for (const std::string& line : log) {
    if (line.find("registered-file table full (64 slots)") != std::string::npos) ++fullLines;
  }
  EXPECT_EQ(fullLines, 1);
}

TEST_F(UringPollerTest, WithoutAFileTableConnectionsUsePlainFds) {
  IoUringOptions config;
  config.fixedFiles = 0;
  UringEchoServer server(0, {}, config);
  EXPECT_EQ(fileTable(server).first, 0u);
  BlockingClient client(server.address());
  EXPECT_TRUE(echoes(client, 256 * 1024, 31));
  EXPECT_EQ(fileTable(server).second, 0u);
}

// Options are per loop: two io_uring loops of one process, built at the same
// time with different tables, each get their own; the loops of a pool get
// their base loop's.
TEST_F(UringPollerTest, EachLoopGetsItsOwnRingOptionsAndAPoolItsBaseLoops) {
  const auto slotsOf = [](EventLoop* loop) {
    return runSync(loop, [loop] {
      return dynamic_cast<UringPoller&>(LoopInternals::poller(*loop)).context().fileSlots();
    });
  };
  const auto optionsWith = [](uint32_t fixedFiles) {
    EventLoopOptions options{.poller = PollerKind::kIoUring, .ioUring = {}};
    options.ioUring.fixedFiles = fixedFiles;
    return options;
  };
  EventLoopThread none(nullptr, "no-table", optionsWith(0));
  EventLoopThread small(nullptr, "small-table", optionsWith(8));
  EventLoop* const noneLoop = none.startLoop();
  EventLoop* const smallLoop = small.startLoop();
  const uint32_t smallSlots = slotsOf(smallLoop);
  if (smallSlots == 0) GTEST_SKIP() << "no registered-file table on this kernel";
  EXPECT_EQ(smallSlots, 8u);
  EXPECT_EQ(slotsOf(noneLoop), 0u);

  std::vector<EventLoop*> poolLoops;
  auto pool = runSync(smallLoop, [&] {
    auto p = std::make_unique<EventLoopThreadPool>(smallLoop, "pool", 2);
    p->start();
    poolLoops = p->allLoops();
    return p;
  });
  ASSERT_EQ(poolLoops.size(), 2u);
  for (EventLoop* loop : poolLoops) {
    EXPECT_EQ(loop->pollerKind(), PollerKind::kIoUring);
    EXPECT_EQ(slotsOf(loop), 8u);
  }
  runSync(smallLoop, [&] { pool.reset(); });
}

// ---- g. SQPOLL (opt-in): a kernel thread takes the submissions ----

TEST_F(UringPollerTest, SqPollRingWithATinySubmissionQueueLosesNothing) {
  // An 8-entry SQ under 20 concurrent echoes: the queue is full again and
  // again, and with SQPOLL a full queue only drains when the kernel's
  // thread gets to it.
  constexpr int kClients = 20;
  constexpr size_t kBytes = 256 * 1024;
  IoUringOptions config;
  config.sqPollIdleMs = 20;
  config.sqEntries = 8;
  UringEchoServer server(0, {}, config);
  const unsigned flags = runSync(server.loop(), [&] {
    return dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop())).context().setupFlags();
  });
  if (!(flags & IORING_SETUP_SQPOLL)) GTEST_SKIP() << "the kernel refused SQPOLL here";
  expectEchoFromThreads(server, kClients, kBytes);
}

// ---- fds posted ring to ring (Poller::postFd, IORING_OP_MSG_RING) ----

// Keeps what is posted to it; the target loop's thread only, but for the
// count.
class CollectingReceiver final : public Poller::FdReceiver {
 public:
  void onFdPosted(UniqueFd fd) override {
    fds_.push_back(std::move(fd));
    count_.fetch_add(1);
  }
  [[nodiscard]] int count() const { return count_.load(); }
  std::vector<UniqueFd>& fds() { return fds_; }

 private:
  std::vector<UniqueFd> fds_;
  std::atomic<int> count_{0};
};

struct Pipe {
  UniqueFd readEnd;
  UniqueFd writeEnd;
};

Pipe makePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("pipe2 failed");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Whether the pipe's write end has been closed everywhere (its read end sees
// end of file) within `timeoutMs`.
bool writeEndClosed(const UniqueFd& readEnd, int timeoutMs = 5000) {
  pollfd p{readEnd.get(), POLLIN, 0};
  if (::poll(&p, 1, timeoutMs) <= 0) return false;
  char c;
  return ::read(readEnd.get(), &c, 1) == 0;
}

// The system call thread `tid` of this process is blocked in, or -1 while it
// runs.
long blockedInSyscall(pid_t tid) {
  std::ifstream file("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string first;
  file >> first;
  char* end = nullptr;
  const long number = std::strtol(first.c_str(), &end, 10);
  return first.empty() || *end != '\0' ? -1 : number;
}

class UringPostTest : public UringPollerTest {
 protected:
  void SetUp() override {
    UringPollerTest::SetUp();
    if (IsSkipped()) return;
    source_ = std::make_unique<EventLoopThread>(nullptr, "source", PollerKind::kIoUring);
    sourceLoop_ = source_->startLoop();
  }
  void TearDown() override { source_.reset(); }

  // Whether the source loop can post to `target` (else the test is skipped).
  bool canPostTo(Poller& target) {
    return runSync(sourceLoop_,
                   [&] { return LoopInternals::poller(*sourceLoop_).canPostTo(target); });
  }
  UringPoller& sourcePoller() {
    return dynamic_cast<UringPoller&>(LoopInternals::poller(*sourceLoop_));
  }

  std::unique_ptr<EventLoopThread> source_;
  EventLoop* sourceLoop_ = nullptr;
};

// A target loop asleep in io_uring_enter (its wait is 10 s) is woken by the
// post itself: no eventfd write, and the fd arrives at once, as itself.
TEST_F(UringPostTest, APostWakesATargetAsleepInItsWait) {
  EventLoopThread targetThread(nullptr, "target", PollerKind::kIoUring);
  EventLoop* target = targetThread.startLoop();
  if (!canPostTo(LoopInternals::poller(*target))) GTEST_SKIP() << "no IORING_OP_MSG_RING here";
  CollectingReceiver receiver;
  const uint64_t token =
      runSync(target, [&] { return LoopInternals::poller(*target).addFdReceiver(&receiver); });
  ASSERT_NE(token, 0u);
  const uint32_t setupFlags = runSync(target, [&] {
    return dynamic_cast<UringPoller&>(LoopInternals::poller(*target)).context().setupFlags();
  });
  ASSERT_TRUE(waitUntil([&] { return blockedInSyscall(target->threadId()) == SYS_io_uring_enter; }))
      << "the target loop never went to sleep in io_uring_enter";
  const uint64_t wakeups = target->wakeupCount();
  Pipe pipe = makePipe();
  const auto posted = std::chrono::steady_clock::now();
  runSync(sourceLoop_, [&] {
    LoopInternals::poller(*sourceLoop_)
        .postFd(LoopInternals::poller(*target), token, std::move(pipe.writeEnd));
  });
  ASSERT_TRUE(waitUntil([&] { return receiver.count() == 1; }, std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - posted, std::chrono::seconds(3))
      << "the post waited for the target's own wake-up (setup flags " << setupFlags << ")";
  EXPECT_EQ(target->wakeupCount(), wakeups) << "the target was woken through its eventfd";
  runSync(target, [&] {
    EXPECT_EQ(::write(receiver.fds().at(0).get(), "x", 1), 1);
    LoopInternals::poller(*target).removeFdReceiver(token);
    receiver.fds().clear();
  });
  char c = 0;
  EXPECT_EQ(::read(pipe.readEnd.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');
  EXPECT_TRUE(writeEndClosed(pipe.readEnd));
  EXPECT_EQ(sourcePoller().failedPosts(), 0u);
}

// A post that reaches a receiver that has left is closed on arrival.
TEST_F(UringPostTest, APostToARemovedReceiverIsClosedOnArrival) {
  EventLoopThread targetThread(nullptr, "target", PollerKind::kIoUring);
  EventLoop* target = targetThread.startLoop();
  if (!canPostTo(LoopInternals::poller(*target))) GTEST_SKIP() << "no IORING_OP_MSG_RING here";
  CollectingReceiver receiver;
  const uint64_t token = runSync(target, [&] {
    const uint64_t t = LoopInternals::poller(*target).addFdReceiver(&receiver);
    LoopInternals::poller(*target).removeFdReceiver(t);
    return t;
  });
  Pipe pipe = makePipe();
  runSync(sourceLoop_, [&] {
    LoopInternals::poller(*sourceLoop_)
        .postFd(LoopInternals::poller(*target), token, std::move(pipe.writeEnd));
  });
  EXPECT_TRUE(writeEndClosed(pipe.readEnd)) << "the posted fd was not closed";
  EXPECT_EQ(receiver.count(), 0);
}

// Posts still on their way to a loop that is being destroyed (it never ran
// again after they were sent) arrive before its ring goes: the loop turns its
// poller until they have, and closes them, their receiver gone. None is left
// in a ring nobody reads.
TEST_F(UringPostTest, ALoopBeingDestroyedTakesInThePostsOnTheirWay) {
  constexpr int kPosts = 50;
  const int baseline = test::openFdCount();
  std::promise<std::pair<EventLoop*, uint64_t>> ready;
  std::promise<void> go;
  CollectingReceiver receiver;
  std::thread targetThread([&] {
    EventLoop target(PollerKind::kIoUring);
    const uint64_t token = LoopInternals::poller(target).addFdReceiver(&receiver);
    ready.set_value({&target, token});
    if (go.get_future().wait_for(test::kWait) != std::future_status::ready) return;
    LoopInternals::poller(target).removeFdReceiver(token);
    // ~EventLoop: the posts arrive (and are closed) in its last turns.
  });
  auto [target, token] = ready.get_future().get();
  std::vector<Pipe> pipes;
  if (canPostTo(LoopInternals::poller(*target))) {
    for (int i = 0; i < kPosts; ++i) pipes.push_back(makePipe());
    runSync(sourceLoop_, [&] {
      for (Pipe& pipe : pipes) {
        LoopInternals::poller(*sourceLoop_)
            .postFd(LoopInternals::poller(*target), token, std::move(pipe.writeEnd));
      }
      // Sent now: the target loop is destroyed before this loop turns again.
      LoopInternals::poller(*sourceLoop_).flushPosts();
    });
  }
  go.set_value();
  targetThread.join();
  if (pipes.empty()) GTEST_SKIP() << "no IORING_OP_MSG_RING here";
  for (int i = 0; i < kPosts; ++i) {
    EXPECT_TRUE(writeEndClosed(pipes[i].readEnd, 0)) << "post " << i << " was lost";
  }
  EXPECT_EQ(receiver.count(), 0);
  pipes.clear();
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

// More posts at once than the target's completion queue holds: each one
// arrives (the kernel keeps the overflow), or comes back failed and is
// closed by the source; none is lost and none stays open.
TEST_F(UringPostTest, MorePostsThanTheTargetsCompletionQueueHoldsLoseNothing) {
  constexpr int kPosts = 100;
  const int baseline = test::openFdCount();
  IoUringOptions tiny;
  tiny.sqEntries = 4;
  tiny.cqEntries = 4;
  auto targetThread = std::make_unique<EventLoopThread>(
      nullptr, "target", EventLoopOptions{.poller = PollerKind::kIoUring, .ioUring = tiny});
  EventLoop* target = targetThread->startLoop();
  if (!canPostTo(LoopInternals::poller(*target))) GTEST_SKIP() << "no IORING_OP_MSG_RING here";
  CollectingReceiver receiver;
  const uint64_t token =
      runSync(target, [&] { return LoopInternals::poller(*target).addFdReceiver(&receiver); });
  std::vector<Pipe> pipes;
  for (int i = 0; i < kPosts; ++i) pipes.push_back(makePipe());
  runSync(sourceLoop_, [&] {
    for (Pipe& pipe : pipes) {
      LoopInternals::poller(*sourceLoop_)
          .postFd(LoopInternals::poller(*target), token, std::move(pipe.writeEnd));
    }
  });
  auto failed = [&] { return runSync(sourceLoop_, [&] { return sourcePoller().failedPosts(); }); };
  ASSERT_TRUE(waitUntil([&] { return receiver.count() + static_cast<int>(failed()) == kPosts; }))
      << receiver.count() << " arrived, " << failed() << " failed, of " << kPosts;
  runSync(target, [&] {
    LoopInternals::poller(*target).removeFdReceiver(token);
    receiver.fds().clear();
  });
  for (int i = 0; i < kPosts; ++i) {
    EXPECT_TRUE(writeEndClosed(pipes[i].readEnd)) << "post " << i << " is still open";
  }
  pipes.clear();
  targetThread.reset();
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

// kHandOver between io_uring loops, with posts that the kernel refuses (as
// it would a post to a ring that has gone): each such connection is closed
// by the accepting loop, its peer sees the close, no fd is left open, and
// the server serves on.
TEST_F(UringPollerTest, AHandOverTheKernelRefusesClosesTheConnection) {
  constexpr int kFailed = 4;
  constexpr int kConnections = 10;
  const int baseline = test::openFdCount();
  {
    UringEchoServer server(
        TcpServer::Options{.threads = 2, .acceptMode = TcpServer::AcceptMode::kHandOver}, {});
    UringPoller& accepting = dynamic_cast<UringPoller&>(LoopInternals::poller(*server.loop()));
    runSync(server.loop(), [&] { accepting.failPostsForTesting(kFailed); });
    std::vector<std::string> answers;
    for (int i = 0; i < kConnections; ++i) {
      BlockingClient client(server.address());
      ASSERT_TRUE(client.sendAll("ping") || i < kFailed);
      answers.push_back(client.recvExactly(4));
    }
    const uint64_t failed = runSync(server.loop(), [&] { return accepting.failedPosts(); });
    const bool ringUsed = server.ringHandOvers() > 0;
    if (!ringUsed && failed == 0) GTEST_SKIP() << "no ring-to-ring hand-over here";
    EXPECT_EQ(failed, static_cast<uint64_t>(kFailed));
    for (int i = 0; i < kConnections; ++i) {
      EXPECT_EQ(answers[i], i < kFailed ? "" : "ping") << "connection " << i;
    }
    EXPECT_EQ(server.ups_.load(), kConnections - kFailed);
    EXPECT_EQ(server.ringHandOvers(), static_cast<uint64_t>(kConnections - kFailed));
    EXPECT_TRUE(waitUntil([&] { return server.connectionCount() == 0; }));
  }
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

}  // namespace
}  // namespace libnet
