// TcpServer's connection limits (Options::maxConnections,
// maxConnectionsPerPeer, refusal) and its per-loop counters (loopStats(),
// queuedOutput()), on both backends.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::randomBytes;
using test::waitUntil;

// A client bound to `source` (a loopback address of its own) before it
// connects; every call bounded by SO_RCVTIMEO.
UniqueFd connectFrom(const char* source, const SocketAddress& server) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  timeval tv{5, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &local.sin_addr);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd.get(), server.sockAddr(), server.sockLen()) != 0) {
    ADD_FAILURE() << "connect from " << source << ": " << std::strerror(errno);
  }
  return fd;
}

// What the server sent until it closed; `closed` false when the wait ran out
// instead (the connection is still open).
std::string readUntilClosed(int fd, bool* closed) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    *closed = n == 0 || errno == ECONNRESET;
    return out;
  }
}

// Sends `data` and expects it echoed: the connection was admitted.
bool echoes(int fd, std::string_view data) {
  if (::send(fd, data.data(), data.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(data.size())) {
    return false;
  }
  std::string got(data.size(), '\0');
  return ::recv(fd, got.data(), got.size(), MSG_WAITALL) == static_cast<ssize_t>(data.size()) &&
         got == data;
}

class TcpServerLimitsTest : public test::EchoServerTest {
 protected:
  TcpServer::LoopStats totals() {
    const std::vector<TcpServer::LoopStats> stats =
        test::runSync(loop_, [&] { return server_->loopStats(); });
    TcpServer::LoopStats sum;
    for (const TcpServer::LoopStats& s : stats) {
      sum.connections += s.connections;
      sum.accepted += s.accepted;
      sum.closed += s.closed;
      sum.refused += s.refused;
      sum.bytesReceived += s.bytesReceived;
      sum.bytesSent += s.bytesSent;
    }
    return sum;
  }

  size_t queued() {
    const std::vector<size_t> perLoop = server_->queuedOutput();
    return std::accumulate(perLoop.begin(), perLoop.end(), size_t{0});
  }
};

TEST_P(TcpServerLimitsTest, OverTheServerLimitAClientGetsTheRefusalThenAClose) {
  // Two I/O loops, each accepting its own: the limit is over both.
  startServer({}, {.threads = 2, .maxConnections = 2, .refusal = "busy\n"});
  BlockingClient a(address_), b(address_);
  ASSERT_TRUE(echoes(a.fd(), "a"));
  ASSERT_TRUE(echoes(b.fd(), "b"));
  BlockingClient c(address_);
  bool closed = false;
  EXPECT_EQ(readUntilClosed(c.fd(), &closed), "busy\n");
  EXPECT_TRUE(closed);
  EXPECT_EQ(totals().refused, 1u);
  // One leaves: the next is served.
  a.close();
  ASSERT_TRUE(waitUntil([&] { return connectionCount() == 1; }));
  BlockingClient d(address_);
  EXPECT_TRUE(echoes(d.fd(), "d"));
  EXPECT_EQ(totals().refused, 1u);
}

TEST_P(TcpServerLimitsTest, WithoutARefusalTheClientIsOnlyClosed) {
  startServer({}, {.maxConnections = 1});
  BlockingClient a(address_);
  ASSERT_TRUE(echoes(a.fd(), "a"));
  BlockingClient b(address_);
  bool closed = false;
  EXPECT_EQ(readUntilClosed(b.fd(), &closed), "");
  EXPECT_TRUE(closed);
  EXPECT_EQ(totals().refused, 1u);
  EXPECT_EQ(totals().connections, 1u);
}

TEST_P(TcpServerLimitsTest, ThePerPeerLimitCountsAddressesNotPorts) {
  startServer({}, {.threads = 2, .maxConnectionsPerPeer = 1, .refusal = "busy\n"});
  UniqueFd first = connectFrom("127.0.0.1", address_);
  ASSERT_TRUE(echoes(first.get(), "1"));
  UniqueFd second = connectFrom("127.0.0.1", address_);
  bool closed = false;
  EXPECT_EQ(readUntilClosed(second.get(), &closed), "busy\n");
  EXPECT_TRUE(closed);
  UniqueFd other = connectFrom("127.0.0.2", address_);
  EXPECT_TRUE(echoes(other.get(), "2"));
  EXPECT_EQ(totals().refused, 1u);
  // Its first gone, 127.0.0.1 may come back.
  first.reset();
  ASSERT_TRUE(waitUntil([&] { return connectionCount() == 1; }));
  UniqueFd again = connectFrom("127.0.0.1", address_);
  EXPECT_TRUE(echoes(again.get(), "3"));
}

TEST_P(TcpServerLimitsTest, CountersMoveByWhatWasSentAndGaugesGoBackToZero) {
  constexpr size_t kClients = 3;
  constexpr size_t kBytes = 100 * 1024;
  startServer({}, {.threads = 2});
  {
    std::vector<std::unique_ptr<BlockingClient>> clients;
    for (size_t i = 0; i < kClients; ++i) {
      clients.push_back(std::make_unique<BlockingClient>(address_));
      const std::string data = randomBytes(kBytes, static_cast<uint32_t>(i));
      ASSERT_TRUE(clients.back()->sendAll(data));
      ASSERT_EQ(clients.back()->recvExactly(kBytes), data);
    }
    const TcpServer::LoopStats open = totals();
    EXPECT_EQ(open.connections, kClients);
    EXPECT_EQ(open.accepted, kClients);
    EXPECT_EQ(open.closed, 0u);
    EXPECT_EQ(open.bytesReceived, kClients * kBytes);
    EXPECT_EQ(open.bytesSent, kClients * kBytes);
    EXPECT_EQ(queued(), 0u);  // all echoed and read
  }
  ASSERT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  const TcpServer::LoopStats after = totals();
  EXPECT_EQ(after.closed, kClients);
  EXPECT_EQ(after.refused, 0u);
  EXPECT_EQ(queued(), 0u);
}

TEST_P(TcpServerLimitsTest, QueuedOutputShowsWhatAClientLeftUnread) {
  constexpr size_t kBytes = 4 * 1024 * 1024;
  // A small receive buffer: most of the echo waits on the server.
  startServer({}, {.maxQueuedOutput = 0});
  BlockingClient client(address_, /*rcvbuf=*/4096);
  ASSERT_TRUE(client.sendAll(randomBytes(kBytes, 7)));
  EXPECT_TRUE(waitUntil([&] { return totals().bytesReceived == kBytes; }));
  EXPECT_GT(queued(), 0u);
  EXPECT_EQ(client.recvExactly(kBytes).size(), kBytes);
  EXPECT_TRUE(waitUntil([&] { return queued() == 0; }));
}

INSTANTIATE_TEST_SUITE_P(Backends, TcpServerLimitsTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
