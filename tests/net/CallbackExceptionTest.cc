// User callbacks that throw, on every backend: the connection whose callback
// threw is closed and its unread input dropped, the error is logged with the
// connection's name, and no other connection ever sees its bytes (the loop's
// scratch buffer on epoll and the received view on io_uring are shared by
// every connection of a loop).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

constexpr std::string_view kPoison = "POISON";

// Thrown by a callback: derives from nothing.
struct NotAnException {
  int code = 7;
};

// What a callback may throw: a std::exception, and things that are not one.
enum class Thrown { kStd, kInt, kString, kObject };
constexpr Thrown kEveryThrown[] = {Thrown::kStd, Thrown::kInt, Thrown::kString, Thrown::kObject};

const char* thrownName(Thrown t) {
  switch (t) {
    case Thrown::kStd:
      return "std::exception";
    case Thrown::kInt:
      return "int";
    case Thrown::kString:
      return "std::string";
    case Thrown::kObject:
      return "NotAnException";
  }
  return "?";
}

[[noreturn]] void throwAs(Thrown t) {
  switch (t) {
    case Thrown::kStd:
      throw std::runtime_error("callback failed");
    case Thrown::kInt:
      throw 42;
    case Thrown::kString:
      throw std::string("callback failed");
    case Thrown::kObject:
      throw NotAnException{};
  }
  throw 0;
}

class CallbackExceptionTest : public test::EchoServerTest {
 protected:
  void SetUp() override {
    // Before the loop thread starts: the sink is not swapped under a logger.
    Logger::setOutput([this](std::string_view line) {
      std::lock_guard<std::mutex> lock(logMutex_);
      log_.emplace_back(line);
    });
    test::EchoServerTest::SetUp();
  }

  void TearDown() override {
    test::EchoServerTest::TearDown();
    Logger::setOutput({});
  }

  // ERROR lines logged so far that contain `text`.
  int errorLinesWith(std::string_view text) {
    std::lock_guard<std::mutex> lock(logMutex_);
    int n = 0;
    for (const std::string& line : log_) {
      if (line.find("ERROR") != std::string::npos && line.find(text) != std::string::npos) ++n;
    }
    return n;
  }

  // Everything each connection's message callback was shown, by name.
  std::string seenBy(const std::string& name) {
    std::lock_guard<std::mutex> lock(seenMutex_);
    return seen_[name];
  }

  void recordSeen(const TcpConnectionPtr& conn, std::string_view bytes) {
    std::lock_guard<std::mutex> lock(seenMutex_);
    seen_[conn->name()].append(bytes);
  }

  // The server side's name of the most recent connection.
  std::string lastName() {
    std::lock_guard<std::mutex> lock(seenMutex_);
    return lastName_;
  }

  void recordUp(const TcpConnectionPtr& conn) {
    std::lock_guard<std::mutex> lock(seenMutex_);
    lastName_ = conn->name();
  }

  // The peer of a connection the server closed sees end of file (or a reset)
  // within the client's receive timeout, not data.
  static bool closedByServer(BlockingClient& client) {
    char byte;
    for (;;) {
      const ssize_t got = ::recv(client.fd(), &byte, 1, 0);
      if (got < 0 && errno == EINTR) continue;
      return got == 0 || (got < 0 && errno == ECONNRESET);  // not data, not a timeout
    }
  }

  // `count` more connections, one after another, each echoing its own bytes.
  void expectServes(int count) {
    for (int i = 0; i < count; ++i) {
      BlockingClient client(address_);
      const std::string message = "hello " + std::to_string(i);
      ASSERT_TRUE(client.sendAll(message));
      ASSERT_EQ(client.recvExactly(message.size()), message) << "connection " << i;
    }
  }

  // Counts ups and downs and remembers the name of the latest connection.
  ConnectionCallback countingConnectionCallback() {
    return [this](const TcpConnectionPtr& conn) {
      if (conn->connected()) {
        recordUp(conn);
        ups_.fetch_add(1);
      } else {
        downs_.fetch_add(1);
      }
    };
  }

  // Starts a server whose message callback shows the bytes to recordSeen()
  // and echoes them, but throws when they hold kPoison, after consuming
  // `consumeBeforeThrow` bytes.
  void startPoisonServer(size_t consumeBeforeThrow) {
    startServer([this, consumeBeforeThrow](TcpServer& server) {
      server.setConnectionCallback(countingConnectionCallback());
      server.setMessageCallback(
          [this, consumeBeforeThrow](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
            recordSeen(conn, buf->view());
            if (buf->view().find(kPoison) != std::string_view::npos) {
              buf->retrieve(std::min(consumeBeforeThrow, buf->readableBytes()));
              throw std::runtime_error("poisoned input");
            }
            conn->send(buf);
          });
    });
  }

  // A sends poison and is closed; B, on the same loop, then sees and gets
  // back exactly its own bytes; the server serves 1000 more connections.
  void poisonThenClean() {
    BlockingClient a(address_);
    ASSERT_TRUE(waitUntil([&] { return ups_.load() == 1; }));
    const std::string aName = lastName();
    ASSERT_TRUE(a.sendAll("aaaa" + std::string(kPoison) + "aaaa"));
    EXPECT_TRUE(closedByServer(a));
    EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
    EXPECT_EQ(errorLinesWith(aName), 1);
    EXPECT_EQ(errorLinesWith("poisoned input"), 1);

    BlockingClient b(address_);
    ASSERT_TRUE(waitUntil([&] { return ups_.load() == 2; }));
    const std::string bName = lastName();
    const std::string mine = "bbbbbbbb";
    ASSERT_TRUE(b.sendAll(mine));
    EXPECT_EQ(b.recvExactly(mine.size()), mine);
    EXPECT_EQ(seenBy(bName), mine);
    b.close();

    expectServes(1000);
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
    EXPECT_EQ(errorLinesWith("poisoned input"), 1);
  }

  std::mutex logMutex_;
  std::vector<std::string> log_;
  std::mutex seenMutex_;
  std::map<std::string, std::string> seen_;
  std::string lastName_;
  // Members, not test-body locals: the server's callbacks run until the
  // fixture's TearDown has destroyed the server.
  std::atomic<int> calls_{0};
};

TEST_P(CallbackExceptionTest, ThrowingMessageCallbackClosesOnlyThatConnection) {
  startPoisonServer(0);
  poisonThenClean();
}

TEST_P(CallbackExceptionTest, ThrowAfterPartialRetrieveLeavesNothingBehind) {
  startPoisonServer(3);
  poisonThenClean();
}

// The throw comes while the bytes sit in the connection's own input buffer
// (a partial line kept from an earlier read), not in shared storage.
TEST_P(CallbackExceptionTest, ThrowWithKeptInputDropsIt) {
  startServer([this](TcpServer& server) {
    server.setConnectionCallback(countingConnectionCallback());
    // Echoes whole lines; a partial line stays for the next read.
    server.setMessageCallback([this](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
      recordSeen(conn, buf->view());
      const size_t eol = buf->view().rfind('\n');
      if (eol == std::string_view::npos) return;
      if (buf->view().find(kPoison) != std::string_view::npos) throw std::runtime_error("bad line");
      conn->send(buf->view().substr(0, eol + 1));
      buf->retrieve(eol + 1);
    });
  });
  BlockingClient a(address_);
  ASSERT_TRUE(waitUntil([&] { return ups_.load() == 1; }));
  const std::string aName = lastName();
  ASSERT_TRUE(a.sendAll("partial " + std::string(kPoison)));
  // The partial line is kept; the newline completes it and the callback throws.
  ASSERT_TRUE(waitUntil([&] { return !seenBy(aName).empty(); }));
  ASSERT_TRUE(a.sendAll(" end\n"));
  EXPECT_TRUE(closedByServer(a));
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
  EXPECT_EQ(errorLinesWith("bad line"), 1);

  BlockingClient b(address_);
  ASSERT_TRUE(waitUntil([&] { return ups_.load() == 2; }));
  const std::string bName = lastName();
  ASSERT_TRUE(b.sendAll("clean line\n"));
  EXPECT_EQ(b.recvExactly(11), "clean line\n");
  EXPECT_EQ(seenBy(bName), "clean line\n");
}

TEST_P(CallbackExceptionTest, ThrowingConnectionCallbackClosesThatConnection) {
  startServer([this](TcpServer& server) {
    server.setConnectionCallback([this](const TcpConnectionPtr& conn) {
      const int call = calls_.fetch_add(1);
      (conn->connected() ? ups_ : downs_).fetch_add(1);
      // The first "up" and the second connection's "down" throw.
      if (call == 0) throw std::runtime_error("up failed");
      if (call == 3) throw std::runtime_error("down failed");
    });
  });
  BlockingClient a(address_);
  EXPECT_TRUE(closedByServer(a));
  // The connection is closed and its "down" still reported.
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
  EXPECT_EQ(errorLinesWith("up failed"), 1);

  {
    BlockingClient b(address_);
    ASSERT_TRUE(b.sendAll("echo me"));
    EXPECT_EQ(b.recvExactly(7), "echo me");
  }
  // B's "down" throws: the server still forgets the connection.
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 2; }));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  EXPECT_EQ(errorLinesWith("down failed"), 1);
  expectServes(10);
}

TEST_P(CallbackExceptionTest, ThrowingWriteCompleteCallbackClosesThatConnection) {
  startServer([](TcpServer& server) {
    server.setConnectionCallback([](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      conn->setWriteCompleteCallback([](const TcpConnectionPtr& c) {
        if (c->context().has_value()) throw std::runtime_error("write-complete failed");
      });
    });
    server.setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
      if (buf->view().find(kPoison) != std::string_view::npos) conn->setContext(true);
      conn->send(buf);
    });
  });
  BlockingClient a(address_);
  ASSERT_TRUE(a.sendAll(std::string(kPoison)));
  EXPECT_EQ(a.recvExactly(kPoison.size()), kPoison);
  EXPECT_TRUE(closedByServer(a));
  EXPECT_EQ(errorLinesWith("write-complete failed"), 1);
  BlockingClient b(address_);
  ASSERT_TRUE(b.sendAll("fine"));
  EXPECT_EQ(b.recvExactly(4), "fine");
}

TEST_P(CallbackExceptionTest, ThrowingHighWaterMarkCallbackClosesThatConnection) {
  startServer([this](TcpServer& server) {
    server.setConnectionCallback([this](const TcpConnectionPtr& conn) {
      if (!conn->connected()) {
        downs_.fetch_add(1);
        return;
      }
      conn->setHighWaterMarkCallback(
          [](const TcpConnectionPtr&, size_t) { throw std::runtime_error("high water failed"); },
          1);
    });
    // Sends more than the socket can take while the peer does not read.
    server.setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
      buf->retrieveAll();
      conn->send(std::string(8 * 1024 * 1024, 'x'));
    });
  });
  BlockingClient a(address_, 4096);
  ASSERT_TRUE(a.sendAll("go"));
  EXPECT_TRUE(waitUntil([&] { return errorLinesWith("high water failed") == 1; }));
  EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  BlockingClient b(address_);
  ASSERT_TRUE(b.sendAll("x"));
  EXPECT_EQ(b.recvExactly(1).size(), 1u);
}

// Timer callbacks: a throw is logged, the rest of the batch runs, and a
// repeating timer keeps its schedule.
TEST_P(CallbackExceptionTest, ThrowingTimerCallbackIsLoggedAndTheLoopGoesOn) {
  std::atomic<int> repeats{0};
  std::atomic<bool> after{false};
  const TimerId repeating = runSync(loop_, [&] {
    loop_->runAfter(std::chrono::milliseconds(0), [] { throw std::runtime_error("timer failed"); });
    loop_->runAfter(std::chrono::milliseconds(1), [&] { after = true; });
    return loop_->runEvery(std::chrono::milliseconds(1), [&] {
      if (repeats.fetch_add(1) < 3) throw std::runtime_error("repeating timer failed");
    });
  });
  EXPECT_TRUE(waitUntil([&] { return after.load() && repeats.load() >= 5; }));
  runSync(loop_, [&] { loop_->cancel(repeating); });
  EXPECT_EQ(errorLinesWith("timer failed"), 4);  // the one-shot and three repeats
  startServer();
  expectServes(3);
}

// Every kind of callback × everything a callback may throw × 0 and 2 I/O
// threads: the connection whose callback threw is closed, connections after
// it (on every loop: round robin puts one of any two in a row on the loop
// that served A) see and get back only their own bytes, and the server
// goes on serving.
class CallbackExceptionMatrixTest : public CallbackExceptionTest {
 protected:
  // B clients after A, each echoed exactly its own bytes and shown only
  // them.
  void expectCleanClients(int count) {
    for (int i = 0; i < count; ++i) {
      BlockingClient b(address_);
      ASSERT_TRUE(waitUntil([&] { return ups_.load() >= 2 + i; }));
      const std::string bName = lastName();
      const std::string mine = "client b " + std::to_string(i);
      ASSERT_TRUE(b.sendAll(mine));
      EXPECT_EQ(b.recvExactly(mine.size()), mine);
      EXPECT_EQ(seenBy(bName), mine);
    }
  }

  // A message callback that echoes, and throws `thrown` on kPoison after
  // consuming part of the input.
  MessageCallback poisonedEcho(Thrown thrown) {
    return [this, thrown](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
      recordSeen(conn, buf->view());
      if (buf->view().find(kPoison) != std::string_view::npos) {
        buf->retrieve(2);
        throwAs(thrown);
      }
      conn->send(buf);
    };
  }

  void run(const std::function<void(Thrown, int)>& scenario) {
    for (const int threads : {0, 2}) {
      for (const Thrown thrown : kEveryThrown) {
        SCOPED_TRACE(std::string("threads=") + std::to_string(threads) +
                     " thrown=" + thrownName(thrown));
        {
          std::lock_guard<std::mutex> lock(seenMutex_);
          seen_.clear();
        }
        calls_ = 0;
        scenario(thrown, threads);
        // Every connection's "down" is in before the next server counts
        // from zero: a late one would be counted against the next round.
        EXPECT_TRUE(waitUntil([&] { return downs_.load() == ups_.load(); }));
        stopServer();
        if (HasFatalFailure()) return;
      }
    }
  }
};

TEST_P(CallbackExceptionMatrixTest, MessageCallback) {
  run([this](Thrown thrown, int threads) {
    startServer(
        [this, thrown](TcpServer& server) {
          server.setConnectionCallback(countingConnectionCallback());
          server.setMessageCallback(poisonedEcho(thrown));
        },
        {.threads = threads});
    BlockingClient a(address_);
    ASSERT_TRUE(a.sendAll("aaaa" + std::string(kPoison) + "aaaa"));
    EXPECT_TRUE(closedByServer(a));
    EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
    expectCleanClients(4);
  });
}

TEST_P(CallbackExceptionMatrixTest, ConnectionCallback) {
  run([this](Thrown thrown, int threads) {
    startServer(
        [this, thrown](TcpServer& server) {
          // A's "up" and the first B's "down" throw (counted per kind: with
          // I/O threads, one B's "down" and the next B's "up" may come in
          // either order).
          server.setConnectionCallback([this, thrown](const TcpConnectionPtr& conn) {
            if (conn->connected()) {
              recordUp(conn);
              if (ups_.fetch_add(1) == 0) throwAs(thrown);
            } else if (downs_.fetch_add(1) == 1) {
              throwAs(thrown);
            }
          });
          server.setMessageCallback(poisonedEcho(thrown));
        },
        {.threads = threads});
    BlockingClient a(address_);
    EXPECT_TRUE(closedByServer(a));
    EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
    expectCleanClients(4);
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  });
}

TEST_P(CallbackExceptionMatrixTest, WriteCompleteCallback) {
  run([this](Thrown thrown, int threads) {
    startServer(
        [this, thrown](TcpServer& server) {
          server.setConnectionCallback([this, thrown](const TcpConnectionPtr& conn) {
            countingConnectionCallback()(conn);
            if (!conn->connected()) return;
            conn->setWriteCompleteCallback([thrown](const TcpConnectionPtr& c) {
              if (c->context().has_value()) throwAs(thrown);
            });
          });
          server.setMessageCallback([this](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
            recordSeen(conn, buf->view());
            if (buf->view().find(kPoison) != std::string_view::npos) conn->setContext(true);
            conn->send(buf);
          });
        },
        {.threads = threads});
    BlockingClient a(address_);
    ASSERT_TRUE(a.sendAll(std::string(kPoison)));
    EXPECT_EQ(a.recvExactly(kPoison.size()), kPoison);
    EXPECT_TRUE(closedByServer(a));
    EXPECT_TRUE(waitUntil([&] { return downs_.load() == 1; }));
    expectCleanClients(4);
  });
}

// Timers and queued functors, on the accept loop and on the connection's
// own loop: logged, the rest of the batch runs, the loops go on.
TEST_P(CallbackExceptionMatrixTest, TimerCallbacksAndQueuedFunctors) {
  run([this](Thrown thrown, int threads) {
    startServer(
        [this, thrown](TcpServer& server) {
          server.setConnectionCallback(countingConnectionCallback());
          server.setMessageCallback(
              [this, thrown](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
                recordSeen(conn, buf->view());
                if (buf->view().find(kPoison) != std::string_view::npos) {
                  // On the connection's loop, then its answer.
                  EventLoop* loop = conn->loop();
                  loop->queueInLoop([thrown] { throwAs(thrown); });
                  loop->runAfter(std::chrono::milliseconds(0), [thrown] { throwAs(thrown); });
                  loop->runAfter(std::chrono::milliseconds(1),
                                 [conn] { conn->send(std::string(kPoison)); });
                  buf->retrieveAll();
                  return;
                }
                conn->send(buf);
              });
        },
        {.threads = threads});
    std::atomic<int> after{0};
    runSync(loop_, [&] {
      loop_->queueInLoop([thrown] { throwAs(thrown); });
      loop_->queueInLoop([&] { after.fetch_add(1); });
      loop_->runAfter(std::chrono::milliseconds(0), [thrown] { throwAs(thrown); });
      loop_->runAfter(std::chrono::milliseconds(0), [&] { after.fetch_add(1); });
    });
    EXPECT_TRUE(waitUntil([&] { return after.load() == 2; }));
    BlockingClient a(address_);
    ASSERT_TRUE(a.sendAll(std::string(kPoison)));
    EXPECT_EQ(a.recvExactly(kPoison.size()), kPoison);
    a.close();
    expectCleanClients(4);
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, CallbackExceptionMatrixTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

INSTANTIATE_TEST_SUITE_P(Backends, CallbackExceptionTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
