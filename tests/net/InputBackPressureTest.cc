// What a connection takes in from a peer that sends more than it reads, and
// how it hands it to the message callback (TcpConnection's output limit and
// the backends' receives):
//  - bytes waiting in the socket when reading starts are taken in only up
//    to the output limit, plus at most one slice: an io_uring multishot
//    recv used to drain the whole socket in one kernel pass, after the pause
//    was decided, and the echo then queued all of it at once;
//  - input kept while reading was off reaches the callback in slices of at
//    most 64 KiB, and a pause between slices holds the rest back.
// Each test runs on epoll, on io_uring, and on io_uring told not to limit its
// multishot recv (what a kernel without that limit gets: single-shot
// receives near the output limit).
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "net/EventLoopOptions.h"
#include "net/EventLoopThread.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

// The most the connection hands the callback at once from input it kept.
constexpr size_t kSlice = 64 * 1024;

struct Backend {
  PollerKind kind;
  bool boundedRecv;  // IoUringOptions::boundedMultishotRecv
};

std::string nameOf(const Backend& backend) {
  if (backend.kind == PollerKind::kEpoll) return "epoll";
  return backend.boundedRecv ? "io_uring" : "io_uring_without_recv_limit";
}

std::string backendName(const ::testing::TestParamInfo<Backend>& info) {
  return nameOf(info.param);
}

void PrintTo(const Backend& backend, std::ostream* os) { *os << nameOf(backend); }

char streamByte(size_t i) { return static_cast<char>('a' + i % 23); }

std::string stream(size_t from, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = streamByte(from + i);
  return s;
}

// A server whose one connection starts with reading stopped, so that the
// test can fill its socket first; its message callback records what it is
// handed and then does what the test asks (echo, or keep).
class InputBackPressureTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam().kind);
    IoUringOptions ring;
    ring.boundedMultishotRecv = GetParam().boundedRecv;
    thread_ = std::make_unique<EventLoopThread>(
        nullptr, "server", EventLoopOptions{.poller = GetParam().kind, .ioUring = ring});
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    if (server_) {
      runSync(loop_, [&] {
        conn_.reset();
        server_.reset();
      });
    }
    thread_.reset();
  }

  // `echo`: the callback sends back what it is handed; otherwise it keeps
  // it in received_ (and stops reading once it holds stopAt_ bytes).
  void startServer(size_t maxQueuedOutput, bool echo) {
    runSync(loop_, [&] {
      server_ = std::make_unique<TcpServer>(loop_, InetAddress(0, true), "input-test",
                                            TcpServer::Options{.maxQueuedOutput = maxQueuedOutput});
      server_->setConnectionCallback([this](const TcpConnectionPtr& conn) {
        if (!conn->connected()) return;
        // Room for all the test sends while nothing reads.
        const int rcvbuf = 1024 * 1024;
        ::setsockopt(conn->fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
        conn->stopRead();
        stoppedInTurn_ = loop_->iteration();
        conn_ = conn;
      });
      server_->setMessageCallback(
          [this, echo](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
            deliveries_.push_back(buf->readableBytes());
            if (echo) {
              conn->send(buf);
              maxTakenIn_ = std::max(
                  maxTakenIn_, conn->queuedOutputBytes() + conn->inputBuffer()->readableBytes());
              return;
            }
            received_ += buf->retrieveAllAsString();
            if (stopAt_ > 0 && received_.size() >= stopAt_) {
              stopAt_ = 0;
              conn->stopRead();
            }
          });
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  // Sends `bytes` of the test stream from `client` while the server does not
  // read, until its socket holds them all (bounded).
  void fillServerSocket(BlockingClient& client, size_t bytes) {
    ASSERT_TRUE(waitUntil([&] { return runSync(loop_, [&] { return conn_ != nullptr; }); }));
    // The connection callback stopped reading; on io_uring that is a receive
    // and its cancellation, submitted at the start of the loop's next turn.
    // Bytes sent before that submission would be taken by the receive (all
    // of them, with no receive limit): wait for a later turn.
    ASSERT_TRUE(waitUntil(
        [&] { return runSync(loop_, [&] { return loop_->iteration() > stoppedInTurn_; }); }));
    ASSERT_TRUE(client.sendAll(stream(0, bytes)));
    ASSERT_TRUE(waitUntil([&] { return serverSocketHolds() == bytes; }))
        << "the server's socket holds " << serverSocketHolds() << " of " << bytes << " bytes";
  }

  size_t serverSocketHolds() {
    return runSync(loop_, [&] {
      int n = 0;
      return conn_ && ::ioctl(conn_->fd(), FIONREAD, &n) == 0 ? static_cast<size_t>(n) : 0;
    });
  }

  size_t largestDelivery() {
    return runSync(loop_, [&] {
      return deliveries_.empty() ? 0 : *std::max_element(deliveries_.begin(), deliveries_.end());
    });
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  SocketAddress address_;
  // Loop thread only.
  TcpConnectionPtr conn_;
  int64_t stoppedInTurn_ = 0;       // the loop turn whose connection callback stopped reading
  std::vector<size_t> deliveries_;  // bytes handed to each callback
  size_t maxTakenIn_ = 0;           // output queued plus input kept, after an echo
  std::string received_;
  size_t stopAt_ = 0;
};

TEST_P(InputBackPressureTest, BytesWaitingWhenReadingStartsAreTakenInOnlyUpToTheLimit) {
  // An echo with a small limit, and a peer whose bytes (five times the
  // limit) wait in the server's socket when it starts reading. On io_uring
  // one multishot recv took all of them in one pass: three provided buffers
  // reached the echo before it paused, and the rest were kept and handed
  // over in one block when the output drained, queued at once. (160 KiB:
  // the socket does not always take 256 KiB from a client with a 4 KiB send
  // buffer, whose small segments keep the receive window from growing.)
  constexpr size_t kLimit = 32 * 1024;
  constexpr size_t kSent = 160 * 1024;
  startServer(kLimit, /*echo=*/true);
  BlockingClient client(address_, 4096);
  fillServerSocket(client, kSent);
  runSync(loop_, [&] { conn_->startRead(); });

  const std::string echoed = client.recvExactly(kSent);
  ASSERT_EQ(echoed.size(), kSent);
  EXPECT_TRUE(echoed == stream(0, kSent)) << "the echo differs from what was sent";
  EXPECT_LE(largestDelivery(), kSlice);
  EXPECT_LE(runSync(loop_, [&] { return maxTakenIn_; }), kLimit + kSlice);
  EXPECT_TRUE(waitUntil([&] { return runSync(loop_, [&] { return conn_->isReading(); }); }));
}

TEST_P(InputBackPressureTest, InputKeptWhileStoppedComesInSlicesAndAStopBetweenThemHolds) {
  // No output limit; the callback keeps what it gets. Bytes appended to the
  // input buffer while reading is stopped stand for what a backend received
  // after the stop was decided.
  constexpr size_t kKept = 300 * 1024;
  constexpr size_t kStopAt = 128 * 1024;
  startServer(0, /*echo=*/false);
  BlockingClient client(address_);
  ASSERT_TRUE(waitUntil([&] { return runSync(loop_, [&] { return conn_ != nullptr; }); }));
  runSync(loop_, [&] {
    conn_->inputBuffer()->append(stream(0, kKept));
    stopAt_ = kStopAt;
    conn_->startRead();
  });
  ASSERT_TRUE(
      waitUntil([&] { return runSync(loop_, [&] { return received_.size() >= kStopAt; }); }));
  // The stop inside a slice's callback holds the rest back, in the buffer.
  EXPECT_EQ(runSync(loop_, [&] { return received_.size(); }), kStopAt);
  EXPECT_EQ(runSync(loop_, [&] { return conn_->inputBuffer()->readableBytes(); }), kKept - kStopAt);
  EXPECT_FALSE(runSync(loop_, [&] { return conn_->isReading(); }));

  runSync(loop_, [&] { conn_->startRead(); });
  ASSERT_TRUE(waitUntil([&] { return runSync(loop_, [&] { return received_.size() >= kKept; }); }));
  EXPECT_LE(largestDelivery(), kSlice);
  EXPECT_TRUE(runSync(loop_, [&] { return received_ == stream(0, kKept); }));
  // And reading goes on from the socket, behind them.
  ASSERT_TRUE(client.sendAll(stream(kKept, 1000)));
  ASSERT_TRUE(
      waitUntil([&] { return runSync(loop_, [&] { return received_.size() == kKept + 1000; }); }));
  EXPECT_TRUE(runSync(loop_, [&] { return received_ == stream(0, kKept + 1000); }));
}

TEST_P(InputBackPressureTest, BytesReceivedAfterAStopComeInSlices) {
  // A stop decided in the callback of the first bytes of a receive: what the
  // backend got in the same pass is kept (on io_uring without a limit on the
  // multishot recv, the whole 256 KiB the socket held) and comes back in
  // slices when reading starts again, in order.
  constexpr size_t kSent = 256 * 1024;
  startServer(0, /*echo=*/false);
  BlockingClient client(address_);
  fillServerSocket(client, kSent);
  runSync(loop_, [&] {
    stopAt_ = 1;
    conn_->startRead();
  });
  ASSERT_TRUE(waitUntil([&] { return runSync(loop_, [&] { return !received_.empty(); }); }));
  ASSERT_TRUE(waitUntil([&] { return runSync(loop_, [&] { return !conn_->isReading(); }); }));
  runSync(loop_, [&] { conn_->startRead(); });
  ASSERT_TRUE(waitUntil([&] { return runSync(loop_, [&] { return received_.size() >= kSent; }); }));
  EXPECT_LE(largestDelivery(), kSlice);
  EXPECT_TRUE(runSync(loop_, [&] { return received_ == stream(0, kSent); }));
}

INSTANTIATE_TEST_SUITE_P(Backends, InputBackPressureTest,
                         ::testing::Values(Backend{PollerKind::kEpoll, true},
                                           Backend{PollerKind::kIoUring, true},
                                           Backend{PollerKind::kIoUring, false}),
                         backendName);

}  // namespace
}  // namespace libnet
