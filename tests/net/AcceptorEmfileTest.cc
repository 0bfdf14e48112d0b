// Acceptor when the process runs out of fds: the pending connection is
// accepted and closed (the peer sees EOF), the loop does not spin, and once
// fds are free again new connections are served. A binary of its own because
// it lowers RLIMIT_NOFILE for the whole process.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "net/Acceptor.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

// Opens /dev/null until the fd table is full (errno is then EMFILE).
std::vector<UniqueFd> everyFreeFd() {
  std::vector<UniqueFd> fds;
  for (;;) {
    UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!fd) return fds;
    fds.push_back(std::move(fd));
  }
}

using test::runSync;
using test::waitUntil;

class AcceptorEmfileTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved_), 0);
    rlimit low = saved_;
    low.rlim_cur = 256;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  }
  void TearDown() override {
    if (saved_.rlim_cur != 0) ::setrlimit(RLIMIT_NOFILE, &saved_);
  }

  rlimit saved_{};
};

TEST_P(AcceptorEmfileTest, DropsTheConnectionWithoutSpinningAndRecovers) {
  EventLoopThread thread(nullptr, "emfile", GetParam());
  EventLoop* loop = thread.startLoop();
  std::unique_ptr<TcpServer> server;
  runSync(loop, [&] {
    server = std::make_unique<TcpServer>(loop, InetAddress(0, true), "emfile");
    server->setMessageCallback(
        [](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) { conn->send(buf); });
    server->start();
  });
  const SocketAddress address = runSync(loop, [&] { return server->listenAddress(); });

  // Use up every fd but one, which the client socket takes.
  std::vector<UniqueFd> filler = everyFreeFd();
  ASSERT_EQ(errno, EMFILE);
  ASSERT_FALSE(filler.empty());
  filler.pop_back();

  {
    // connect() completes from the backlog; accept() then hits EMFILE.
    test::BlockingClient client(address);
    bool eof = false;
    client.recvUntilEof(&eof);
    EXPECT_TRUE(eof) << "the refused connection should see a clean close";
    // Nothing else is ready, so a loop that is not spinning stays put while
    // the test thread takes another round trip through it.
    const int64_t before = runSync(loop, [&] { return loop->iteration(); });
    for (int i = 0; i < 20; ++i) runSync(loop, [] {});
    const int64_t after = runSync(loop, [&] { return loop->iteration(); });
    EXPECT_LE(after - before, 30) << "the loop kept waking with nothing to do";
  }
  EXPECT_EQ(runSync(loop, [&] { return server->connectionCount(); }), 0u);

  filler.clear();
  test::BlockingClient client(address);
  ASSERT_TRUE(client.sendAll("after"));
  EXPECT_EQ(client.recvExactly(5), "after");
  client.close();
  runSync(loop, [&] { server.reset(); });
}

// What became of client connections the server could not all take.
struct Outcome {
  int served = 0;  // the echo came back
  int closed = 0;  // the server closed (EOF or reset)
  int hung = 0;    // neither, within the wait
};

// Sends a few bytes on every client and waits (bounded) until each is
// either echoed back or closed by the server.
Outcome echoOrClose(const std::vector<UniqueFd>& clients) {
  static constexpr std::string_view kPing = "ping";
  Outcome outcome;
  std::vector<std::string> got(clients.size());
  std::vector<bool> done(clients.size(), false);
  for (size_t i = 0; i < clients.size(); ++i) {
    if (::send(clients[i].get(), kPing.data(), kPing.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(kPing.size())) {
      done[i] = true;  // already closed (reset) by the server
      ++outcome.closed;
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + test::kWait;
  for (;;) {
    std::vector<pollfd> pending;
    std::vector<size_t> index;
    for (size_t i = 0; i < clients.size(); ++i) {
      if (done[i]) continue;
      pending.push_back({clients[i].get(), POLLIN, 0});
      index.push_back(i);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (pending.empty() || left.count() <= 0) {
      outcome.hung = static_cast<int>(pending.size());
      return outcome;
    }
    const int ready = ::poll(pending.data(), pending.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      ADD_FAILURE() << "poll: " << std::strerror(errno);
      outcome.hung = static_cast<int>(pending.size());
      return outcome;
    }
    for (size_t k = 0; k < pending.size(); ++k) {
      if (pending[k].revents == 0) continue;
      const size_t i = index[k];
      char buf[64];
      const ssize_t n = ::recv(clients[i].get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        got[i].append(buf, static_cast<size_t>(n));
        if (got[i] == kPing) {
          done[i] = true;
          ++outcome.served;
        }
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        done[i] = true;
        ++outcome.closed;
      }
    }
  }
}

// Opens and closes an fd over and over on a thread of its own, as another
// part of an application does (a file being served, a log file rolling),
// until destroyed or kWait has passed: it takes, now and then, the fd that
// an acceptor frees for a moment to drop a connection.
class FdChurner {
 public:
  FdChurner()
      : thread_([this] {
          const auto deadline = std::chrono::steady_clock::now() + test::kWait;
          while (!stop_.load() && std::chrono::steady_clock::now() < deadline) {
            UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
          }
        }) {}
  ~FdChurner() {
    stop_.store(true);
    thread_.join();
  }
  FdChurner(const FdChurner&) = delete;
  FdChurner& operator=(const FdChurner&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Per-loop accept on two I/O loops, each with a listening socket of its own:
// out of fds, every pending connection beyond what fits is accepted and
// closed (none is left hanging in a backlog, even while the clients hold
// every connection the server could take), the loops do not spin, the
// server serves again once fds are free, and the spare fds are all back
// (the fd count returns to what it was before). Several rounds, because the
// acceptors race for the fd that dropping a connection frees, with each
// other and with a thread that opens and closes files meanwhile.
TEST_P(AcceptorEmfileTest, PerLoopAcceptorsServeOrCloseEveryConnectionAndKeepTheirSpares) {
  constexpr int kRounds = 10;
  constexpr int kClients = 120;
  constexpr int kFree = 4;  // fds left free for the server when the clients connect
  EventLoopThread thread(nullptr, "emfile", GetParam());
  EventLoop* loop = thread.startLoop();
  std::mutex mutex;
  std::vector<EventLoop*> ioLoops;
  std::unique_ptr<TcpServer> server;
  runSync(loop, [&] {
    server = std::make_unique<TcpServer>(
        loop, InetAddress(0, true), "emfile",
        TcpServer::Options{.threads = 2, .acceptMode = TcpServer::AcceptMode::kPerLoop});
    server->setThreadInitCallback([&](EventLoop* ioLoop) {
      std::lock_guard lock(mutex);
      ioLoops.push_back(ioLoop);
    });
    server->setMessageCallback(
        [](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) { conn->send(buf); });
    server->start();
  });
  const SocketAddress address = runSync(loop, [&] { return server->listenAddress(); });
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(ioLoops.size(), 2u);
  }
  const int baseline = test::openFdCount();

  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // The clients' sockets first, while there are fds to make them.
    std::vector<UniqueFd> clients;
    for (int i = 0; i < kClients; ++i) {
      UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      ASSERT_TRUE(fd.valid());
      timeval tv{5, 0};
      ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      clients.push_back(std::move(fd));
    }
    // Then every fd but kFree.
    std::vector<UniqueFd> filler = everyFreeFd();
    ASSERT_EQ(errno, EMFILE);
    ASSERT_GE(filler.size(), static_cast<size_t>(kFree));
    filler.resize(filler.size() - kFree);
    Outcome outcome;
    {
      FdChurner churner;
      // connect() completes from the backlog whether or not the server can
      // accept; the two loops take their share each.
      for (const UniqueFd& fd : clients) {
        int rc;
        do {
          rc = ::connect(fd.get(), address.sockAddr(), address.sockLen());
        } while (rc != 0 && errno == EINTR);
        ASSERT_EQ(rc, 0) << std::strerror(errno);
      }
      outcome = echoOrClose(clients);
    }
    EXPECT_EQ(outcome.hung, 0) << outcome.hung << " connections neither served nor closed ("
                               << outcome.served << " served, " << outcome.closed << " closed)";
    EXPECT_GT(outcome.closed, 0) << "the server never ran out of fds; the test proves nothing";
    EXPECT_LE(outcome.served, kFree + 2);
    // Nothing is ready now, so a loop that is not spinning stays put while
    // the test thread takes round trips through it.
    for (EventLoop* ioLoop : ioLoops) {
      const int64_t before = runSync(ioLoop, [&] { return ioLoop->iteration(); });
      for (int i = 0; i < 20; ++i) runSync(ioLoop, [] {});
      const int64_t after = runSync(ioLoop, [&] { return ioLoop->iteration(); });
      EXPECT_LE(after - before, 30) << "an I/O loop kept waking with nothing to do";
    }
    clients.clear();
    filler.clear();
    EXPECT_TRUE(
        waitUntil([&] { return runSync(loop, [&] { return server->connectionCount(); }) == 0; }));
    // Served again, on both loops (the kernel spreads connections over them).
    for (int i = 0; i < 8; ++i) {
      test::BlockingClient client(address);
      ASSERT_TRUE(client.sendAll("after"));
      EXPECT_EQ(client.recvExactly(5), "after") << "connection " << i;
    }
    EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
        << test::openFdCount() << " fds open, " << baseline << " before";
    if (HasFailure()) break;  // a failed round costs kWait; one tells enough
  }
  runSync(loop, [&] { server.reset(); });
}

INSTANTIATE_TEST_SUITE_P(Backends, AcceptorEmfileTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
