// TcpServer + TcpConnection on real loopback sockets, on every backend.
#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "base/CountDownLatch.h"
#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/ConnectionLayer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/LoopInternals.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::randomBytes;
using test::runSync;
using test::temporaryFile;
using test::waitUntil;

class TcpServerTest : public test::EchoServerTest {
 protected:
  // Starts an echo server that hands out its first connection through
  // acceptedConnection().
  void startServerKeepingConnection() {
    startServer([this](TcpServer& server) {
      server.setConnectionCallback([this](const TcpConnectionPtr& conn) {
        if (conn->connected() && !firstConnectionSeen_.exchange(true)) {
          firstConnection_.set_value(conn);
        }
      });
    });
  }

  // The server-side connection, or nullptr if none came within kWait.
  TcpConnectionPtr acceptedConnection() {
    auto future = firstConnection_.get_future();
    if (future.wait_for(test::kWait) != std::future_status::ready) return nullptr;
    return future.get();
  }

  std::promise<TcpConnectionPtr> firstConnection_;
  std::atomic<bool> firstConnectionSeen_{false};
};

TEST_P(TcpServerTest, EchoesOneConnectionByteExact) {
  startServer();
  BlockingClient client(address_);
  const std::string data = randomBytes(300 * 1024, 1);
  ASSERT_TRUE(client.sendAll(data));
  EXPECT_EQ(client.recvExactly(data.size()), data);
  client.close();
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

void echoManyConcurrent(TcpServerTest* self, const SocketAddress& address, int connections,
                        const std::function<size_t()>& serverCount) {
  std::vector<std::unique_ptr<BlockingClient>> clients;
  std::vector<std::string> payloads;
  for (int i = 0; i < connections; ++i) {
    clients.push_back(std::make_unique<BlockingClient>(address));
    payloads.push_back(randomBytes(1 + static_cast<size_t>(i * 331 % 65536), 100 + i));
  }
  // All connections are open at once.
  EXPECT_TRUE(waitUntil([&] { return serverCount() == static_cast<size_t>(connections); }));
  for (int i = 0; i < connections; ++i) ASSERT_TRUE(clients[i]->sendAll(payloads[i]));
  for (int i = 0; i < connections; ++i) {
    ASSERT_EQ(clients[i]->recvExactly(payloads[i].size()), payloads[i]) << "connection " << i;
  }
  clients.clear();
  EXPECT_TRUE(waitUntil([&] { return serverCount() == 0; }));
  (void)self;
}

TEST_P(TcpServerTest, Echoes200ConcurrentConnections) {
  startServer();
  echoManyConcurrent(this, address_, 200, [this] { return connectionCount(); });
  EXPECT_EQ(ups_.load(), 200);
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 200; }));
}

TEST_P(TcpServerTest, Echoes200ConcurrentConnectionsOnThreeIoThreads) {
  std::mutex mutex;
  std::set<EventLoop*> loopsUsed;
  startServer(
      [&](TcpServer& server) {
        server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
          EXPECT_TRUE(conn->loop()->isInLoopThread());
          std::lock_guard lock(mutex);
          loopsUsed.insert(conn->loop());
        });
      },
      {.threads = 3});
  echoManyConcurrent(this, address_, 200, [this] { return connectionCount(); });
  std::lock_guard lock(mutex);
  EXPECT_EQ(loopsUsed.size(), 3u);
  EXPECT_EQ(loopsUsed.count(loop_), 0u);
}

TEST_P(TcpServerTest, LargeMessageFiresHighWaterMarkAndOneWriteComplete) {
  constexpr size_t kSize = 8 * 1024 * 1024;
  constexpr size_t kMark = 1024 * 1024;
  const std::string payload = randomBytes(kSize, 7);
  std::atomic<int> highWaterMarks{0};
  std::atomic<size_t> highWaterSize{0};
  std::atomic<int> writeCompletes{0};
  startServer([&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      conn->setHighWaterMarkCallback(
          [&](const TcpConnectionPtr&, size_t size) {
            highWaterMarks.fetch_add(1);
            highWaterSize = size;
          },
          kMark);
      conn->send(payload);
    });
    server.setWriteCompleteCallback([&](const TcpConnectionPtr&) { writeCompletes.fetch_add(1); });
  });
  // A small receive window keeps most of the message queued in the server.
  BlockingClient client(address_, 64 * 1024);
  const std::string got = client.recvExactly(kSize);
  ASSERT_EQ(got.size(), kSize);
  EXPECT_TRUE(got == payload);
  EXPECT_TRUE(waitUntil([&] { return writeCompletes.load() >= 1; }));
  runSync(loop_, [] {});  // anything still queued on the loop has run
  EXPECT_EQ(highWaterMarks.load(), 1);
  EXPECT_GE(highWaterSize.load(), kMark);
  EXPECT_EQ(writeCompletes.load(), 1);
}

// Byte i of an endless test stream (not periodic over any small length).
char streamByte(size_t i) {
  const uint64_t x = (i * 0x9E3779B97F4A7C15ull) ^ (i >> 13);
  return static_cast<char>(x >> 56);
}

// What a client that sends without reading gets to push into an echo server
// before it can send no more, and what the server holds for it then.
struct Flood {
  size_t sent = 0;            // bytes the client got into its socket
  bool blocked = false;       // it could send no more for a while
  size_t serverBuffered = 0;  // the server's output queue plus input buffer
};

class BackPressureTest : public TcpServerTest {
 protected:
  // An echo server whose connections pause reading above `maxQueuedOutput`
  // (0: never); its one connection is kept in conn_.
  void startEcho(size_t maxQueuedOutput) {
    startServer(
        [this](TcpServer& server) {
          server.setConnectionCallback([this](const TcpConnectionPtr& conn) {
            if (conn->connected()) conn_ = conn;
          });
        },
        {.maxQueuedOutput = maxQueuedOutput});
  }

  // Sends the test stream from `fd` (non-blocking) without reading, until
  // `limit` bytes are out or no byte could go for a whole second.
  Flood flood(int fd, size_t limit) {
    Flood result;
    char chunk[64 * 1024];
    while (result.sent < limit) {
      const size_t n = std::min(sizeof chunk, limit - result.sent);
      for (size_t i = 0; i < n; ++i) chunk[i] = streamByte(result.sent + i);
      const ssize_t got = ::send(fd, chunk, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (got > 0) {
        result.sent += static_cast<size_t>(got);
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd pfd{fd, POLLOUT, 0};
        if (::poll(&pfd, 1, 1000) == 0) {
          result.blocked = true;
          break;
        }
        continue;
      }
      ADD_FAILURE() << "send: " << std::strerror(errno);
      break;
    }
    result.serverBuffered = runSync(loop_, [this] {
      return conn_ ? conn_->queuedOutputBytes() + conn_->inputBuffer()->readableBytes() : 0;
    });
    return result;
  }

  TcpConnectionPtr conn_;  // loop thread only
};

TEST_P(BackPressureTest, ANonReadingSenderCannotGrowTheServerPastTheLimit) {
  constexpr size_t kLimit = 256 * 1024;
  // Slack over the limit: what one read can add after the last check (64 KiB
  // on epoll; io_uring completions already in flight when reading stops).
  constexpr size_t kSlack = 1024 * 1024;
  startEcho(kLimit);
  BlockingClient client(address_, 64 * 1024);
  const Flood flood = this->flood(client.fd(), 256 * 1024 * 1024);
  ASSERT_TRUE(flood.blocked) << "sent " << flood.sent << " bytes without being held back";
  EXPECT_LE(flood.serverBuffered, kLimit + kSlack) << "after " << flood.sent << " bytes sent";
  EXPECT_TRUE(runSync(loop_, [this] { return conn_ && !conn_->isReading(); }));

  // Once the client reads, everything comes back, in order, and the server
  // reads again: nothing was lost while it was paused.
  std::string got = client.recvExactly(flood.sent);
  ASSERT_EQ(got.size(), flood.sent);
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != streamByte(i)) FAIL() << "echo differs at byte " << i;
  }
  EXPECT_TRUE(waitUntil([&] { return runSync(loop_, [this] { return conn_->isReading(); }); }));
  ASSERT_TRUE(client.sendAll("and more"));
  EXPECT_EQ(client.recvExactly(8), "and more");
}

TEST_P(BackPressureTest, WithoutALimitTheServerBuffersWhatTheSenderSends) {
  // The control: the flood above is what fills a server that does not push
  // back, so the bound there is the limit's doing.
  constexpr size_t kFlood = 32 * 1024 * 1024;
  startEcho(0);
  BlockingClient client(address_, 64 * 1024);
  const Flood flood = this->flood(client.fd(), kFlood);
  EXPECT_EQ(flood.sent, kFlood);
  EXPECT_TRUE(waitUntil([&] {
    return runSync(loop_, [this] { return conn_ && conn_->queuedOutputBytes() > kFlood / 2; });
  }));
  runSync(loop_, [this] { conn_->forceClose(); });
}

INSTANTIATE_TEST_SUITE_P(Backends, BackPressureTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

TEST_P(TcpServerTest, AnIdleConnectionGivesBackItsBufferMemory) {
  // A 4 MiB echo to a client that reads late grows the server's buffers
  // (its output queue, its receive and send buffers on io_uring); once it
  // is over, the connection keeps small buffers only and the storage waits
  // in the loop's bounded pool for the next busy connection.
  startServer([this](TcpServer& server) {
    server.setConnectionCallback([this](const TcpConnectionPtr& conn) {
      if (!conn->connected() || firstConnectionSeen_.exchange(true)) return;
      // A small socket buffer: the kernel must not absorb the whole echo.
      const int sndbuf = 16 * 1024;
      ::setsockopt(conn->fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
      firstConnection_.set_value(conn);
    });
  });
  BlockingClient client(address_, 16 * 1024);
  const std::string payload = randomBytes(4 * 1024 * 1024, 21);
  // All of it is sent before any is read: the echo piles up in the server.
  ASSERT_TRUE(client.sendAll(payload));
  const std::string got = client.recvExactly(payload.size());
  ASSERT_TRUE(got == payload);
  const TcpConnectionPtr conn = acceptedConnection();
  ASSERT_NE(conn, nullptr);
  size_t capacity = 0;
  EXPECT_TRUE(waitUntil([&] {
    capacity = runSync(loop_, [&] { return conn->bufferCapacity(); });
    return capacity <= 3 * BufferPool::kSmallCapacity;
  })) << "an idle connection still holds "
      << capacity << " bytes of buffers";
  EXPECT_LE(runSync(loop_, [&] { return LoopInternals::bufferPool(*loop_).spareCount(); }),
            BufferPool::kMaxSpare);
  // And it still works.
  ASSERT_TRUE(client.sendAll("again"));
  EXPECT_EQ(client.recvExactly(5), "again");
}

TEST_P(TcpServerTest, PeerHalfCloseStillGetsEverythingQueued) {
  startServer();
  BlockingClient client(address_, 64 * 1024);
  const std::string data = randomBytes(4 * 1024 * 1024, 3);
  ASSERT_TRUE(client.sendAll(data));
  client.shutdownWrite();  // FIN while most of the echo is still queued
  bool eof = false;
  const std::string got = client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);
  ASSERT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data);
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

// closeAfterOutput() with the answer written: the FIN leaves at once, not
// when the loop gets to the queued close after the rest of its turn. The
// loop is held right after the call while the client looks for the FIN; a
// client that reads to end of file (HTTP/1.0, ab) otherwise waits for the
// whole turn. On io_uring the answer itself is still queued at that point
// (it leaves with the ring's next submission, the FIN as its completion
// comes in), so there is nothing to look for while the loop is held: the
// next test is io_uring's analogue.
TEST_P(TcpServerTest, CloseAfterOutputSendsTheFinBeforeTheLoopMovesOn) {
  if (GetParam() == PollerKind::kIoUring) {
    GTEST_SKIP() << "io_uring sends the answer with the ring's next submission";
  }
  startServerKeepingConnection();
  BlockingClient client(address_);
  TcpConnectionPtr conn = acceptedConnection();
  ASSERT_NE(conn, nullptr);

  CountDownLatch release(1);
  CountDownLatch closing(1);
  loop_->runInLoop([&] {
    conn->send(std::string_view("answer"));
    conn->closeAfterOutput();
    closing.countDown();
    EXPECT_TRUE(release.waitFor(test::kWait));
  });
  ASSERT_TRUE(closing.waitFor(test::kWait));
  pollfd pfd{.fd = client.fd(), .events = POLLRDHUP, .revents = 0};
  const int ready = ::poll(&pfd, 1, static_cast<int>(test::kWait / std::chrono::milliseconds(1)));
  release.countDown();
  EXPECT_EQ(ready, 1) << "no FIN while the loop was still in the turn that closed";
  EXPECT_NE(pfd.revents & POLLRDHUP, 0);
  bool eof = false;
  EXPECT_EQ(client.recvUntilEof(&eof), "answer");
  EXPECT_TRUE(eof);
  conn.reset();
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

// The same on every backend, where io_uring can show it: the FIN leaves
// with the answer, not with the close that follows the answer's completion
// a loop turn or two later (through the ring, with its next submission).
// The loop is held in the write-complete callback (the first thing it runs
// once the answer is out) while the client looks for the FIN; on io_uring
// the send's completion has shut the write side by then. The answer ends in
// bytes, then in a file (sent from the loop, not by a send op).
TEST_P(TcpServerTest, CloseAfterOutputSendsTheFinWithoutTheLoopsNextTurn) {
  for (const bool file : {false, true}) {
    SCOPED_TRACE(file ? "file" : "bytes");
    firstConnection_ = std::promise<TcpConnectionPtr>();
    firstConnectionSeen_ = false;
    startServerKeepingConnection();
    BlockingClient client(address_);
    TcpConnectionPtr conn = acceptedConnection();
    ASSERT_NE(conn, nullptr);

    CountDownLatch release(1);
    CountDownLatch written(1);
    loop_->runInLoop([&] {
      conn->setWriteCompleteCallback([&](const TcpConnectionPtr&) {
        written.countDown();
        // Longer than the client looks: a FIN seen only after it gave up
        // counts for nothing.
        EXPECT_TRUE(release.waitFor(2 * test::kWait));
      });
      if (file) {
        conn->sendFile(temporaryFile("answer"), 0, 6);
      } else {
        conn->send(std::string_view("answer"));
      }
      conn->closeAfterOutput();
    });
    ASSERT_TRUE(written.waitFor(test::kWait));
    pollfd pfd{.fd = client.fd(), .events = POLLRDHUP, .revents = 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(test::kWait / std::chrono::milliseconds(1)));
    release.countDown();
    EXPECT_EQ(ready, 1) << "no FIN while the loop was held once the answer was out";
    EXPECT_NE(pfd.revents & POLLRDHUP, 0);
    bool eof = false;
    EXPECT_EQ(client.recvUntilEof(&eof), "answer");
    EXPECT_TRUE(eof);
    conn.reset();
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
    stopServer();
  }
}

// Answers larger than the socket takes at once, closed after output, to a
// client that reads a little at a time: the FIN (on io_uring, sent as a
// send's completion leaves the queue empty) never cuts an answer short; the
// server's small send buffer makes every send short. Two sizes: one that
// ends within a turn's first sends, one that goes in many.
TEST_P(TcpServerTest, CloseAfterOutputLargeAnswerToASlowReaderArrivesWhole) {
  const int baseline = test::openFdCount();
  for (const size_t size : {size_t{200 * 1024}, size_t{6 * 1024 * 1024}}) {
    SCOPED_TRACE(size);
    const std::string payload = randomBytes(size, 43);
    std::atomic<bool> seen{false};
    startServer([&](TcpServer& server) {
      server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
        if (!conn->connected() || seen.exchange(true)) return;
        // A small send buffer, so that even the smaller answer takes the
        // socket several times (autotuning would take it whole).
        const int sndbuf = 16 * 1024;
        ASSERT_EQ(::setsockopt(conn->fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
        conn->send(payload);
        conn->closeAfterOutput();
      });
    });
    BlockingClient client(address_, 8 * 1024);
    std::string got;
    char chunk[1024];
    for (;;) {
      const ssize_t n = ::recv(client.fd(), chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        EXPECT_EQ(n, 0) << std::strerror(errno);
        break;
      }
      got.append(chunk, static_cast<size_t>(n));
    }
    ASSERT_EQ(got.size(), payload.size());
    EXPECT_TRUE(got == payload);
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
    stopServer();
  }
  // Every socket is closed once its connection is gone.
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

TEST_P(TcpServerTest, DataAndFinQueuedTogetherAreBothSeen) {
  // Edge-triggered subtlety: when data and the FIN are both queued before the
  // server reads, there is one edge for both, and the first read is short.
  startServerKeepingConnection();
  BlockingClient client(address_);
  TcpConnectionPtr conn = acceptedConnection();
  ASSERT_NE(conn, nullptr);

  // Hold the loop while both arrive.
  CountDownLatch release(1);
  CountDownLatch holding(1);
  loop_->runInLoop([&] {
    holding.countDown();
    EXPECT_TRUE(release.waitFor(test::kWait));
  });
  ASSERT_TRUE(holding.waitFor(test::kWait));
  const std::string data = randomBytes(1000, 21);
  ASSERT_TRUE(client.sendAll(data));
  client.shutdownWrite();
  pollfd pfd{conn->fd(), POLLRDHUP, 0};
  ASSERT_EQ(::poll(&pfd, 1, 5000), 1) << "the FIN did not reach the server socket";
  release.countDown();

  bool eof = false;
  EXPECT_EQ(client.recvUntilEof(&eof), data);
  EXPECT_TRUE(eof) << "the server never noticed the FIN behind the data";
  conn.reset();
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

TEST_P(TcpServerTest, ShutdownHalfClosesOnlyAfterOutputDrains) {
  const std::string payload = randomBytes(2 * 1024 * 1024, 9);
  startServer([&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      conn->send(payload);
      conn->shutdown();
    });
  });
  BlockingClient client(address_, 64 * 1024);
  bool eof = false;
  const std::string got = client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);
  ASSERT_EQ(got.size(), payload.size());
  EXPECT_TRUE(got == payload);
  // Our side is still open for writing: the server keeps reading after its
  // half-close, and closes fully when we do.
  client.close();
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

TEST_P(TcpServerTest, CloseAfterOutputClosesFullyOnceQueuedBytesAreOut) {
  const std::string payload = randomBytes(2 * 1024 * 1024, 41);
  startServer([&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      conn->send(payload);
      conn->closeAfterOutput();
      conn->send("dropped: sent after the close was asked for");
    });
  });
  BlockingClient client(address_, 64 * 1024);
  bool eof = false;
  const std::string got = client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);
  ASSERT_EQ(got.size(), payload.size());
  EXPECT_TRUE(got == payload);
  // Unlike shutdown(), the server does not wait for our FIN.
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

int noDelayOf(int fd) {
  int on = -1;
  socklen_t len = sizeof on;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len) != 0) return -1;
  return on;
}

TEST_P(TcpServerTest, AcceptedSocketsHaveNoDelayAndTheirLocalAddress) {
  std::atomic<int> seen{-2};
  std::string local;
  startServer(
      [&](TcpServer& server) {
        server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
          if (!conn->connected()) return;
          local = conn->localAddress().toIpPort();
          seen = noDelayOf(conn->fd());
        });
      },
      {.tcpNoDelay = true});
  BlockingClient client(address_);
  ASSERT_TRUE(waitUntil([&] { return seen.load() != -2; }));
  EXPECT_EQ(seen.load(), 1) << "TCP_NODELAY not set on the accepted socket";
  EXPECT_EQ(local, address_.toIpPort());
}

TEST_P(TcpServerTest, NoDelayIsOffUnlessAsked) {
  startServerKeepingConnection();
  BlockingClient client(address_);
  TcpConnectionPtr conn = acceptedConnection();
  ASSERT_NE(conn, nullptr);
  EXPECT_EQ(noDelayOf(conn->fd()), 0);
}

// An unlinked temporary file holding `contents`.
TEST_P(TcpServerTest, SendFileKeepsOrderWithSendsAroundIt) {
  const std::string big = randomBytes(3 * 1024 * 1024, 31);
  const std::string small = randomBytes(5000, 32);
  std::atomic<int> filesOpened{0};
  startServer([&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      UniqueFd bigFile = temporaryFile(big);
      UniqueFd smallFile = temporaryFile(small);
      if (bigFile && smallFile) filesOpened += 2;
      conn->send("head|");
      conn->sendFile(std::move(bigFile), 1000, big.size() - 1000);  // from an offset
      conn->send("|middle|");
      Buffer head;
      head.append("|head of small|");
      conn->sendFile(std::move(smallFile), 0, small.size(), &head);
      conn->send("|tail");
      conn->shutdown();
    });
  });
  BlockingClient client(address_, 64 * 1024);  // small window: sendfile hits EAGAIN
  bool eof = false;
  const std::string got = client.recvUntilEof(&eof);
  ASSERT_EQ(filesOpened.load(), 2);
  EXPECT_TRUE(eof);
  const std::string expected =
      "head|" + big.substr(1000) + "|middle|" + "|head of small|" + small + "|tail";
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected);
  client.close();
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

TEST_P(TcpServerTest, PeerResetDuringSendFileClosesWithoutLeak) {
  const std::string big = randomBytes(8 * 1024 * 1024, 33);
  startServer([&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      (conn->connected() ? ups_ : downs_).fetch_add(1);
      if (conn->connected()) conn->sendFile(temporaryFile(big), 0, big.size());
    });
  });
  const int baseline = test::openFdCount();
  {
    BlockingClient client(address_, 16 * 1024);
    // Read a little so the file is known to be under way, then stop reading:
    // the server waits for a writable socket (a POLLOUT op on io_uring).
    EXPECT_EQ(client.recvExactly(1000), big.substr(0, 1000));
    client.resetConnection();
  }
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

TEST_P(TcpServerTest, SendFileShorterThanAnnouncedClosesAndLeaksNoFd) {
  startServer([&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      conn->sendFile(temporaryFile("only ten b"), 0, 100);
    });
  });
  const int baseline = test::openFdCount();
  {
    BlockingClient client(address_);
    bool eof = false;
    const std::string got = client.recvUntilEof(&eof);
    // What the file had may go out first; never more, and the connection ends.
    EXPECT_LE(got.size(), 10u);
    EXPECT_EQ(got, std::string("only ten b").substr(0, got.size()));
    EXPECT_TRUE(eof);
  }
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

TEST_P(TcpServerTest, PeerResetWithOutputQueuedClosesWithoutLeak) {
  startServer();
  const int baseline = test::openFdCount();
  {
    BlockingClient client(address_, 16 * 1024);
    // Not reading: the echo piles up in the server's output buffer.
    ASSERT_TRUE(client.sendAll(randomBytes(2 * 1024 * 1024, 5)));
    EXPECT_TRUE(waitUntil([&] { return ups_.load() == 1; }));
    client.resetConnection();
  }
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

// A peer that resets while the last part of an answer closed after output
// is still going out (on io_uring: a send in flight, whose completion would
// shut the write side): the connection closes and leaves no fd.
TEST_P(TcpServerTest, PeerResetDuringTheLastSendOfACloseAfterOutputLeavesNoFd) {
  const std::string payload = randomBytes(200 * 1024, 51);
  startServer([&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      const int sndbuf = 16 * 1024;
      ASSERT_EQ(::setsockopt(conn->fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf), 0);
      conn->send(payload);
      conn->closeAfterOutput();
    });
  });
  const int baseline = test::openFdCount();
  {
    BlockingClient client(address_, 8 * 1024);
    EXPECT_EQ(client.recvExactly(1024), payload.substr(0, 1024));
    client.resetConnection();
  }
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

TEST_P(TcpServerTest, ForceCloseFromAnotherThreadClosesNow) {
  startServerKeepingConnection();
  BlockingClient client(address_);
  TcpConnectionPtr conn = acceptedConnection();
  ASSERT_NE(conn, nullptr);
  EXPECT_TRUE(conn->connected());
  conn->forceClose();
  bool eof = false;
  EXPECT_TRUE(client.recvUntilEof(&eof).empty());
  EXPECT_TRUE(eof);
  EXPECT_TRUE(waitUntil([&] { return conn->disconnected(); }));
  conn.reset();
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

TEST_P(TcpServerTest, SendsFromAnotherThreadArriveInOrder) {
  startServerKeepingConnection();
  BlockingClient client(address_);
  TcpConnectionPtr conn = acceptedConnection();
  ASSERT_NE(conn, nullptr);
  constexpr int kMessages = 10000;
  std::string expected;
  std::thread sender([&] {
    char line[16];
    for (int i = 0; i < kMessages; ++i) {
      std::snprintf(line, sizeof line, "%08d\n", i);
      conn->send(std::string_view(line, 9));
    }
  });
  for (int i = 0; i < kMessages; ++i) {
    char line[16];
    std::snprintf(line, sizeof line, "%08d\n", i);
    expected.append(line, 9);
  }
  const std::string got = client.recvExactly(expected.size());
  sender.join();
  EXPECT_TRUE(got == expected);
  conn.reset();
}

// Constructs a TcpServer on `loop`'s thread and reports how it failed:
// {errno, what()}, or {0, ""} if it bound. The exception is caught on the loop
// thread; carrying it across threads in a future trips a ThreadSanitizer false
// positive in libstdc++'s reference-counted exception strings.
std::pair<int, std::string> tryBind(EventLoop* loop, const SocketAddress& address) {
  return runSync(loop, [&]() -> std::pair<int, std::string> {
    try {
      TcpServer server(loop, address, "probe");
      return {0, ""};
    } catch (const std::system_error& e) {
      return {e.code().value(), e.what()};
    }
  });
}

TEST_P(TcpServerTest, PortInUseThrowsSystemErrorNamingTheAddress) {
  startServer();
  const auto [err, what] = tryBind(loop_, address_);
  EXPECT_EQ(err, EADDRINUSE) << "a second server bound " << address_.toIpPort();
  EXPECT_NE(what.find("bind " + address_.toIpPort()), std::string::npos) << what;
  EXPECT_NE(what.find("in use"), std::string::npos) << what;
}

TEST_P(TcpServerTest, AddressNotOnThisHostThrows) {
  // 192.0.2.1 (TEST-NET-1) is not assigned here: bind fails locally, nothing
  // is sent anywhere.
  const auto [err, what] = tryBind(loop_, InetAddress("192.0.2.1", 0));
  EXPECT_EQ(err, EADDRNOTAVAIL) << what;
}

// Configuration errors throw at construction, naming the field; a callback
// set after start() is refused (the connections are made with what start()
// copied), not ignored with a log line.
TEST_P(TcpServerTest, BadOptionsThrowAndCallbacksAfterStartAreRefused) {
  runSync(loop_, [&] {
    const auto make = [&](const TcpServer::Options& options) {
      TcpServer server(loop_, InetAddress(0, true), "bad", options);
    };
    try {
      make({.threads = -1});
      ADD_FAILURE() << "no error for a negative thread count";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
    }
    EXPECT_THROW(make({.deferAccept = -std::chrono::seconds(1)}), std::invalid_argument);
    EXPECT_THROW(make({.idleTimeout = -std::chrono::seconds(1)}), std::invalid_argument);
    EXPECT_THROW(make({.idleTimeout = std::chrono::seconds(1), .idleTick = Duration::zero()}),
                 std::invalid_argument);
    TcpServer server(loop_, InetAddress(0, true), "late");
    EXPECT_NO_THROW(server.setMessageCallback(nullptr));
    server.start();
    EXPECT_THROW(server.setConnectionCallback(nullptr), std::logic_error);
    EXPECT_THROW(server.setMessageCallback(nullptr), std::logic_error);
    EXPECT_THROW(server.setWriteCompleteCallback(nullptr), std::logic_error);
    EXPECT_THROW(server.setThreadInitCallback(nullptr), std::logic_error);
    EXPECT_THROW(server.setIdleCallback(nullptr), std::logic_error);
  });
}

TEST_P(TcpServerTest, EchoesOverIpv6Loopback) {
  UniqueFd probe(::socket(AF_INET6, SOCK_STREAM, 0));
  const InetAddress v6(0, true, true);
  if (!probe || ::bind(probe.get(), v6.sockAddr(), v6.sockLen()) != 0) {
    GTEST_SKIP() << "no IPv6 loopback here";
  }
  probe.reset();
  startServer({}, {}, v6);
  EXPECT_EQ(address_.family(), AF_INET6);
  BlockingClient client(address_);
  const std::string data = randomBytes(10000, 11);
  ASSERT_TRUE(client.sendAll(data));
  EXPECT_EQ(client.recvExactly(data.size()), data);
}

TEST_P(TcpServerTest, ManyShortConnectionsLeaveNoFds) {
  startServer({}, {.threads = 2});
  const int baseline = test::openFdCount();
  for (int i = 0; i < 100; ++i) {
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll("ping"));
    ASSERT_EQ(client.recvExactly(4), "ping");
  }
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

// The short-connection path end to end, in both accept modes on two I/O
// loops: 5000 connections each, every one answered with exactly its own bytes
// and then closed by the server (closeAfterOutput, as an HTTP server does
// for "Connection: close"), then a storm of peers that send and reset at
// once; afterwards no fd is left open and the server still serves.
TEST_P(TcpServerTest, ShortConnectionStormsAreAnsweredAndLeaveNoFdsInBothAcceptModes) {
  constexpr int kConnections = 5000;
  constexpr int kResets = 1000;
  for (const TcpServer::AcceptMode mode :
       {TcpServer::AcceptMode::kPerLoop, TcpServer::AcceptMode::kHandOver}) {
    SCOPED_TRACE(mode == TcpServer::AcceptMode::kPerLoop ? "per loop" : "hand over");
    const int baseline = test::openFdCount();
    startServer(
        [](TcpServer& server) {
          server.setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
            if (buffer->readableBytes() < 16) return;  // the whole request first
            conn->send(buffer);
            conn->closeAfterOutput();
          });
        },
        {.threads = 2, .acceptMode = mode});
    for (int i = 0; i < kConnections; ++i) {
      BlockingClient client(address_);
      char request[17];
      std::snprintf(request, sizeof request, "request %08d", i);
      ASSERT_TRUE(client.sendAll(std::string_view(request, 16))) << "connection " << i;
      bool eof = false;
      ASSERT_EQ(client.recvUntilEof(&eof), std::string_view(request, 16)) << "connection " << i;
      ASSERT_TRUE(eof) << "connection " << i;
    }
    for (int i = 0; i < kResets; ++i) {
      BlockingClient client(address_);
      ASSERT_TRUE(client.sendAll("reset right away"));
      client.resetConnection();
    }
    // Reset connections may still wait in the backlog: every one is
    // accepted (and then sees its reset) eventually.
    EXPECT_TRUE(waitUntil([&] { return ups_.load() == kConnections + kResets; }))
        << ups_.load() << " of " << kConnections + kResets << " connections came up";
    EXPECT_TRUE(waitUntil([&] { return downs_.load() == kConnections + kResets; }))
        << downs_.load() << " of " << kConnections + kResets << " connections went down";
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }))
        << connectionCount() << " connections left";
    {
      BlockingClient client(address_);
      ASSERT_TRUE(client.sendAll("still serving..."));
      bool eof = false;
      EXPECT_EQ(client.recvUntilEof(&eof), "still serving...");
    }
    stopServer();
    EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
        << test::openFdCount() << " fds open, " << baseline << " before";
  }
}

// Whether two io_uring loops of this process can hand sockets over ring to
// ring (the kernel has IORING_OP_MSG_RING): asked of two loops' pollers.
bool UringHandOverAvailable() {
  static const bool available = [] {
    if (!EventLoop::unavailableReason(PollerKind::kIoUring).empty()) return false;
    auto other = std::make_unique<EventLoopThread>(nullptr, "probe", PollerKind::kIoUring);
    EventLoop* target = other->startLoop();
    bool can = false;
    std::thread([&] {
      EventLoop source(PollerKind::kIoUring);
      can = LoopInternals::poller(source).canPostTo(LoopInternals::poller(*target));
    }).join();
    return can;
  }();
  return available;
}

// kHandOver spreads connections over the I/O loops round-robin, each made
// (and served) on its own loop's thread. Between io_uring loops the sockets
// go ring to ring: every one arrives as a message on its loop's ring, and
// no I/O loop's eventfd is written; Options::ringHandOver false sends them
// through the loops' queues instead, as on epoll.
TEST_P(TcpServerTest, HandOverSpreadsConnectionsRoundRobinEachMadeOnItsOwnLoop) {
  constexpr int kLoops = 3;
  constexpr int kConnections = 60;
  const bool ringPossible = GetParam() == PollerKind::kIoUring && UringHandOverAvailable();
  for (const bool ring : {true, false}) {
    SCOPED_TRACE(ring ? "ring hand-over allowed" : "queue hand-over forced");
    auto ioLoops = std::make_shared<std::vector<EventLoop*>>();
    auto ioLoopsMutex = std::make_shared<std::mutex>();
    auto ups = std::make_shared<std::atomic<int>>(0);
    auto offLoop = std::make_shared<std::atomic<int>>(0);
    EventLoop* const serverLoop = loop_;
    startServer(
        [=](TcpServer& server) {
          server.setThreadInitCallback([=](EventLoop* loop) {
            std::lock_guard lock(*ioLoopsMutex);
            ioLoops->push_back(loop);
          });
          server.setConnectionCallback([=](const TcpConnectionPtr& conn) {
            if (!conn->connected()) return;
            ups->fetch_add(1);
            // Made on its own loop's thread, which is not the accepting one.
            if (EventLoop::currentThreadLoop() != conn->loop() || conn->loop() == serverLoop) {
              offLoop->fetch_add(1);
            }
          });
        },
        {.threads = kLoops, .acceptMode = TcpServer::AcceptMode::kHandOver, .ringHandOver = ring});
    std::vector<uint64_t> wakeupsBefore;
    {
      std::lock_guard lock(*ioLoopsMutex);
      ASSERT_EQ(ioLoops->size(), static_cast<size_t>(kLoops));
      for (EventLoop* loop : *ioLoops) wakeupsBefore.push_back(loop->wakeupCount());
    }
    for (int i = 0; i < kConnections; ++i) {
      BlockingClient client(address_);
      ASSERT_TRUE(client.sendAll("ping"));
      ASSERT_EQ(client.recvExactly(4), "ping") << "connection " << i;
    }
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
    EXPECT_EQ(ups->load(), kConnections);
    EXPECT_EQ(offLoop->load(), 0) << "connections made off their own loop's thread";
    const std::vector<TcpServer::LoopStats> stats =
        runSync(loop_, [&] { return server_->loopStats(); });
    ASSERT_EQ(stats.size(), static_cast<size_t>(kLoops));
    for (size_t i = 0; i < stats.size(); ++i) {
      SCOPED_TRACE("I/O loop " + std::to_string(i));
      EXPECT_EQ(stats[i].accepted, static_cast<uint64_t>(kConnections / kLoops));
      EXPECT_EQ(stats[i].connections, 0u);
      if (ring && ringPossible) {
        EXPECT_EQ(stats[i].ringHandOvers, stats[i].accepted);
      } else {
        EXPECT_EQ(stats[i].ringHandOvers, 0u);
      }
    }
    if (ring && ringPossible) {
      std::lock_guard lock(*ioLoopsMutex);
      for (size_t i = 0; i < ioLoops->size(); ++i) {
        EXPECT_EQ((*ioLoops)[i]->wakeupCount(), wakeupsBefore[i])
            << "I/O loop " << i << " was woken through its eventfd";
      }
    }
    stopServer();
  }
}

// A connection's fd is closed without EPOLL_CTL_DEL. If the application
// duplicated it (or a child forked without exec holds it), the socket lives
// on and epoll keeps reporting the old registration; those events must be
// dropped, not dispatched to the freed Channel (ASan would report the use
// after free), and the server must go on serving.
TEST_P(TcpServerTest, EventsOfASocketThatOutlivedItsConnectionAreDropped) {
  // Shared with the callbacks, which may run until the server is gone.
  auto duplicate = std::make_shared<std::atomic<int>>(-1);
  auto downs = std::make_shared<std::atomic<int>>(0);
  startServer([duplicate, downs](TcpServer& server) {
    server.setConnectionCallback([duplicate, downs](const TcpConnectionPtr& conn) {
      if (!conn->connected()) {
        downs->fetch_add(1);
      } else if (duplicate->load() < 0) {
        duplicate->store(::dup(conn->fd()));
      }
    });
    server.setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
      conn->send(buffer);
      conn->closeAfterOutput();
    });
  });
  BlockingClient first(address_);
  ASSERT_TRUE(first.sendAll("one"));
  EXPECT_EQ(first.recvExactly(3), "one");
  ASSERT_TRUE(waitUntil([&] { return downs->load() == 1; }));
  ASSERT_GE(duplicate->load(), 0);
  // The duplicate keeps the socket open: these bytes make epoll report the
  // old registration (the connection is gone).
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(first.sendAll("stale"));
  BlockingClient second(address_);
  ASSERT_TRUE(second.sendAll("two"));
  EXPECT_EQ(second.recvExactly(3), "two");
  ASSERT_TRUE(waitUntil([&] { return downs->load() == 2; }));
  ::close(duplicate->load());
  bool eof = false;
  (void)first.recvUntilEof(&eof);  // the last reference gone, the socket closes
  BlockingClient third(address_);
  ASSERT_TRUE(third.sendAll("three"));
  EXPECT_EQ(third.recvExactly(5), "three");
  stopServer();
}

// One listening socket per loop takes SO_REUSEPORT, yet another server
// binding the port still gets "address in use", as without threads.
TEST_P(TcpServerTest, PerLoopListenersStillRefuseASecondServerOnThePort) {
  startServer({}, {.threads = 2});
  EXPECT_THROW(runSync(loop_, [&] { TcpServer other(loop_, address_, "other"); }),
               std::system_error);
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("ping"));
  EXPECT_EQ(client.recvExactly(4), "ping");
}

// TCP_DEFER_ACCEPT: a connection is handed to the server once its first bytes
// have arrived; a silent one waits in the kernel (here for up to 30 s, far
// longer than the test takes).
TEST_P(TcpServerTest, DeferAcceptHandsOverConnectionsOnceTheyHaveSpoken) {
  startServer({}, {.threads = 2, .deferAccept = std::chrono::seconds(30)});
  BlockingClient silent(address_);
  BlockingClient talker(address_);
  ASSERT_TRUE(talker.sendAll("hello"));
  EXPECT_EQ(talker.recvExactly(5), "hello");
  EXPECT_EQ(connectionCount(), 1u) << "the silent connection was accepted before speaking";
  ASSERT_TRUE(silent.sendAll("late"));
  EXPECT_EQ(silent.recvExactly(4), "late");
  EXPECT_EQ(connectionCount(), 2u);
}

TEST_P(TcpServerTest, DestroyingServerClosesLiveConnections) {
  startServer({}, {.threads = 2});
  std::vector<std::unique_ptr<BlockingClient>> clients;
  for (int i = 0; i < 10; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
  ASSERT_TRUE(waitUntil([&] { return connectionCount() == 10; }));
  stopServer();
  EXPECT_EQ(downs_.load(), 10);
  for (auto& client : clients) {
    bool eof = false;
    EXPECT_TRUE(client->recvUntilEof(&eof).empty());
    EXPECT_TRUE(eof);
  }
}

// Connects to `address` and resets each connection at once, as fast as it
// can, until destroyed (test::ConnectStorm).
std::unique_ptr<test::ConnectStorm> connectResetStorm(const SocketAddress& address) {
  return std::make_unique<test::ConnectStorm>(
      address, [](int, UniqueFd fd) { test::ConnectStorm::resetOnClose(fd); }, 200000);
}

// A ConnectionLayer that adds nothing (each connection gets its loop's own
// strategy); it reads a member on every call, so that a call made after it
// was freed is seen by ASan.
class PassThroughLayer final : public ConnectionLayer {
 public:
  [[nodiscard]] ConnectionIo::Ptr newConnectionIo(EventLoop* loop,
                                                  const ConnectionIo::Parts& parts) const override {
    made_.fetch_add(1, std::memory_order_relaxed);
    return LoopInternals::poller(*loop).newConnectionIo(parts);
  }

 private:
  mutable std::atomic<int> made_{0};
};

// Destroys a server with two I/O loops that accept on sockets of their own
// while a storm of connections arrives, `kRounds` times: the server is built
// and destroyed by `onServerThread` on `serverLoop`'s thread (or on this
// thread when serverLoop is null, whose loop then never runs). The server
// holds the only reference to its connection callback's state (and to its
// layer, `withLayer`), so a per-loop acceptor or a connection that used
// either after the server's destructor freed them would be a use after free
// (ASan). Nothing of the server may run once its destructor has returned.
// With kHandOver the server's own loop accepts and hands the sockets over
// (ring to ring between io_uring loops: some are still unsubmitted on the
// accepting ring, or on their way to an I/O loop's, when the destructor
// runs); every one must become a connection that is torn down, or be closed.
void destroyServerDuringConnectStorm(EventLoop* serverLoop, PollerKind kind, bool withLayer,
                                     TcpServer::AcceptMode mode = TcpServer::AcceptMode::kPerLoop) {
  constexpr int kRounds = 20;
  uint64_t ringHandOvers = 0;
  const int baseline = test::openFdCount();
  std::unique_ptr<EventLoop> ownLoop;
  if (serverLoop == nullptr) {
    ownLoop = std::make_unique<EventLoop>(kind);
    serverLoop = ownLoop.get();
  }
  auto onServerThread = [serverLoop](auto fn) {
    if (serverLoop->isInLoopThread()) return fn();
    return runSync(serverLoop, fn);
  };
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto ups = std::make_shared<std::atomic<int>>(0);
    auto destroyed = std::make_shared<std::atomic<bool>>(false);
    auto callsAfterDestruction = std::make_shared<std::atomic<int>>(0);
    std::unique_ptr<TcpServer> server;
    const SocketAddress address = onServerThread([&] {
      server = std::make_unique<TcpServer>(
          serverLoop, InetAddress(0, true), "storm",
          TcpServer::Options{
              .threads = 2,
              .acceptMode = mode,
              .layer = withLayer ? std::make_shared<PassThroughLayer>() : nullptr,
          });
      // State that lives in the callback only, so it dies with the server.
      std::string tag(256, 'x');
      server->setConnectionCallback(
          [tag, ups, destroyed, callsAfterDestruction](const TcpConnectionPtr& conn) {
            if (destroyed->load()) callsAfterDestruction->fetch_add(1);
            if (conn->connected() && tag.size() == 256 && tag.back() == 'x') ups->fetch_add(1);
          });
      server->start();
      return server->listenAddress();
    });
    {
      const auto storm = connectResetStorm(address);
      // Mid-storm: connections are being accepted on both loops.
      ASSERT_TRUE(waitUntil([&] { return ups->load() >= 20; }))
          << "only " << ups->load() << " connections came up";
      onServerThread([&] {
        for (const TcpServer::LoopStats& loop : server->loopStats()) {
          ringHandOvers += loop.ringHandOvers;
        }
        server.reset();
        destroyed->store(true);
      });
    }
    EXPECT_EQ(callsAfterDestruction->load(), 0) << "a callback ran after ~TcpServer returned";
  }
  ownLoop.reset();
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
  if (mode == TcpServer::AcceptMode::kHandOver && kind == PollerKind::kIoUring &&
      UringHandOverAvailable()) {
    EXPECT_GT(ringHandOvers, 0u) << "the storm never took the ring-to-ring path";
  }
}

// A pass-through layer that notes, for each strategy it makes, whether the
// thread making it is the loop's own, and on which loop.
class LoopCheckingLayer final : public ConnectionLayer {
 public:
  [[nodiscard]] ConnectionIo::Ptr newConnectionIo(EventLoop* loop,
                                                  const ConnectionIo::Parts& parts) const override {
    if (!loop->isInLoopThread()) madeElsewhere_.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++perLoop_[loop];
    }
    return LoopInternals::poller(*loop).newConnectionIo(parts);
  }
  [[nodiscard]] int madeElsewhere() const { return madeElsewhere_.load(); }
  [[nodiscard]] std::vector<int> counts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<int> counts;
    for (const auto& [loop, count] : perLoop_) counts.push_back(count);
    return counts;
  }

 private:
  mutable std::atomic<int> madeElsewhere_{0};
  mutable std::mutex mutex_;
  mutable std::map<EventLoop*, int> perLoop_;
};

// kHandOver: the accepting loop hands the socket over and the I/O loop makes
// the connection (and its strategy, from its own backend) on its own thread;
// round-robin spreads the connections evenly.
TEST_P(TcpServerTest, HandedOverConnectionsAreMadeOnTheLoopThatOwnsThem) {
  constexpr int kConnections = 40;
  auto layer = std::make_shared<LoopCheckingLayer>();
  startServer({}, {.threads = 2, .acceptMode = TcpServer::AcceptMode::kHandOver, .layer = layer});
  for (int i = 0; i < kConnections; ++i) {
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll("ping"));
    ASSERT_EQ(client.recvExactly(4), "ping") << "connection " << i;
  }
  EXPECT_EQ(layer->madeElsewhere(), 0) << "strategies made off their loop's thread";
  EXPECT_EQ(layer->counts(), (std::vector<int>{kConnections / 2, kConnections / 2}));
}

TEST_P(TcpServerTest, DestroyingAPerLoopServerDuringAConnectStormUsesNothingFreed) {
  destroyServerDuringConnectStorm(loop_, GetParam(), /*withLayer=*/false);
}

TEST_P(TcpServerTest, DestroyingAPerLoopServerWithALayerDuringAConnectStormUsesNothingFreed) {
  destroyServerDuringConnectStorm(loop_, GetParam(), /*withLayer=*/true);
}

// The same with the server's own loop not running (quit, or never run, as in
// a main() that destroys its server after loop() returned): only the I/O
// loops accept, and the destructor must not wait for the server's loop.
TEST_P(TcpServerTest, DestroyingAPerLoopServerWhoseLoopIsNotRunningUsesNothingFreed) {
  destroyServerDuringConnectStorm(nullptr, GetParam(), /*withLayer=*/true);
}

TEST_P(TcpServerTest, DestroyingAHandOverServerDuringAConnectStormLosesNoFd) {
  destroyServerDuringConnectStorm(loop_, GetParam(), /*withLayer=*/false,
                                  TcpServer::AcceptMode::kHandOver);
}

TEST_P(TcpServerTest, DestroyingAHandOverServerWithALayerDuringAConnectStormLosesNoFd) {
  destroyServerDuringConnectStorm(loop_, GetParam(), /*withLayer=*/true,
                                  TcpServer::AcceptMode::kHandOver);
}

// Resets are everyday traffic for a server: a storm of them must not log
// ERROR or WARN lines (an attack run logged ~190k), yet the paths that see
// them must run (they log at DEBUG, which this test turns on to prove it).
class PeerResetLoggingTest : public TcpServerTest {
 protected:
  void SetUp() override {
    savedLevel_ = Logger::level();
    // Set before the server's loop logs anything; runSync() in startServer()
    // orders it before the loop thread's first use of the sink.
    Logger::setOutput([this](std::string_view line) {
      std::lock_guard lock(mutex_);
      lines_.emplace_back(line);
    });
    Logger::setLevel(LogLevel::kDebug);
    TcpServerTest::SetUp();
  }

  void TearDown() override {
    TcpServerTest::TearDown();  // the loop thread is joined: nothing logs now
    Logger::setOutput({});
    Logger::setLevel(savedLevel_);
  }

  // Captured lines that contain `word`.
  std::vector<std::string> linesWith(std::string_view word) {
    std::lock_guard lock(mutex_);
    std::vector<std::string> found;
    for (const std::string& line : lines_) {
      if (line.find(word) != std::string::npos) found.push_back(line);
    }
    return found;
  }

  LogLevel savedLevel_ = LogLevel::kInfo;
  std::mutex mutex_;
  std::vector<std::string> lines_;  // guarded by mutex_
};

TEST_P(PeerResetLoggingTest, AResetStormLogsNoErrorsAndTheServerServesOn) {
  startServer({}, {.threads = 2});
  const int baseline = test::openFdCount();
  constexpr int kRounds = 60;
  const std::string small = randomBytes(8 * 1024, 11);
  const std::string large = randomBytes(1024 * 1024, 12);
  for (int i = 0; i < kRounds; ++i) {
    // Reset right after connecting (io_uring may find no peer address any
    // more), right after sending (the read or the echo meets the reset), and
    // with a large echo queued for a client that never reads.
    BlockingClient quick(address_);
    quick.resetConnection();
    BlockingClient sender(address_);
    ASSERT_TRUE(sender.sendAll(small));
    sender.resetConnection();
    BlockingClient hoarder(address_, 16 * 1024);
    ASSERT_TRUE(hoarder.sendAll(large));
    hoarder.resetConnection();
  }
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("still serving"));
  EXPECT_EQ(client.recvExactly(13), "still serving");

  for (const char* level : {" ERROR ", " WARN "}) {
    const std::vector<std::string> found = linesWith(level);
    EXPECT_TRUE(found.empty()) << found.size() << " lines with" << level
                               << ", first: " << found.front();
  }
  // The storm did reach the reset paths: they just log at DEBUG.
  EXPECT_FALSE(linesWith("Connection reset by peer").empty() && linesWith("Broken pipe").empty())
      << "no reset was seen by the server; the test proves nothing";
}

INSTANTIATE_TEST_SUITE_P(Backends, PeerResetLoggingTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

INSTANTIATE_TEST_SUITE_P(Backends, TcpServerTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
