// TcpServer::Options::handOver in kHandOver mode: with connections whose
// lifetimes differ per loop, kLeastConnections keeps the loops' live counts
// level where kRoundRobin lets them drift apart. On every backend (on
// io_uring the sockets go ring to ring where the kernel can).
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::waitUntil;

class TcpServerHandOverTest : public test::EchoServerTest {
 protected:
  void startHandOver(TcpServer::HandOver policy, int threads = 2) {
    startServer(
        {},
        {.threads = threads, .acceptMode = TcpServer::AcceptMode::kHandOver, .handOver = policy});
  }

  std::vector<TcpServer::LoopStats> stats() const { return server_->loopStats(); }

  // The loop that made the next connection (bounded wait): the one whose
  // accepted count grew past `before`.
  int landedOn(const std::vector<TcpServer::LoopStats>& before) {
    int loop = -1;
    EXPECT_TRUE(waitUntil([&] {
      const std::vector<TcpServer::LoopStats> now = stats();
      for (size_t i = 0; i < now.size(); ++i) {
        if (now[i].accepted > before[i].accepted) loop = static_cast<int>(i);
      }
      return loop >= 0;
    }));
    return loop;
  }

  // Connects `count` clients one after the other: one that lands on loop 0
  // stays open (held), any other is closed, and its close seen by the
  // server, before the next connects. Returns where each landed.
  std::vector<int> connectSkewed(int count, std::vector<std::unique_ptr<BlockingClient>>* held) {
    std::vector<int> landed;
    for (int i = 0; i < count; ++i) {
      const std::vector<TcpServer::LoopStats> before = stats();
      auto client = std::make_unique<BlockingClient>(address_);
      const int loop = landedOn(before);
      if (loop < 0) return landed;
      landed.push_back(loop);
      if (loop == 0) {
        held->push_back(std::move(client));
        continue;
      }
      client->close();
      const uint64_t closedBefore = before[loop].closed;
      EXPECT_TRUE(waitUntil([&] { return stats()[loop].closed > closedBefore; }));
    }
    return landed;
  }

  std::vector<size_t> liveCounts() const {
    std::vector<size_t> live;
    for (const TcpServer::LoopStats& s : stats()) live.push_back(s.connections);
    return live;
  }
};

TEST_P(TcpServerHandOverTest, LeastConnectionsAvoidsTheLoopThatHoldsItsConnections) {
  startHandOver(TcpServer::HandOver::kLeastConnections);
  std::vector<std::unique_ptr<BlockingClient>> held;
  const std::vector<int> landed = connectSkewed(20, &held);
  ASSERT_EQ(landed.size(), 20u);
  // The first goes to loop 0 (both empty) and stays; from then on loop 1,
  // whose connections all close, is always the lighter.
  EXPECT_EQ(std::count(landed.begin(), landed.end(), 0), 1);
  EXPECT_EQ(held.size(), 1u);
  EXPECT_TRUE(waitUntil([&] { return liveCounts() == std::vector<size_t>({1, 0}); }));
  EXPECT_EQ(stats()[1].accepted, 19u);
}

TEST_P(TcpServerHandOverTest, RoundRobinPilesLongLivedConnectionsOnOneLoop) {
  startHandOver(TcpServer::HandOver::kRoundRobin);
  std::vector<std::unique_ptr<BlockingClient>> held;
  const std::vector<int> landed = connectSkewed(20, &held);
  ASSERT_EQ(landed.size(), 20u);
  // Each loop in turn, whatever it holds: loop 0 keeps half of them.
  EXPECT_EQ(std::count(landed.begin(), landed.end(), 0), 10);
  EXPECT_TRUE(waitUntil([&] { return liveCounts() == std::vector<size_t>({10, 0}); }));
}

TEST_P(TcpServerHandOverTest, LeastConnectionsCountsSocketsStillOnTheirWay) {
  startHandOver(TcpServer::HandOver::kLeastConnections, 3);
  // Connected back to back and all held: the accepting loop may hand over
  // several before any I/O loop has made its connection, so only counting
  // what it handed (not what the loops report made) keeps them level.
  std::vector<std::unique_ptr<BlockingClient>> clients;
  for (int i = 0; i < 30; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 30; }));
  EXPECT_EQ(liveCounts(), std::vector<size_t>({10, 10, 10}));
  // All gone, every loop is empty again: ties are taken in turn.
  clients.clear();
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 3; }));
  EXPECT_EQ(liveCounts(), std::vector<size_t>({1, 1, 1}));
}

TEST_P(TcpServerHandOverTest, LeastConnectionsCountsRefusedSocketsAsEnded) {
  // A socket refused by a limit never becomes a connection; had it stayed
  // counted, every refusal would push later connections off its loop.
  startServer({}, {.threads = 2,
                   .acceptMode = TcpServer::AcceptMode::kHandOver,
                   .handOver = TcpServer::HandOver::kLeastConnections,
                   .maxConnections = 1});
  auto first = std::make_unique<BlockingClient>(address_);
  ASSERT_TRUE(waitUntil([&] { return connectionCount() == 1; }));
  for (int i = 0; i < 4; ++i) {
    BlockingClient refused(address_);
    char byte;
    EXPECT_LE(::recv(refused.fd(), &byte, 1, 0), 0);  // closed by the server
  }
  EXPECT_TRUE(waitUntil([&] { return stats()[0].refused + stats()[1].refused == 4; }));
  first.reset();
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  // Nothing is live: one client at a time (the limit), the loops take turns.
  std::vector<int> landed;
  for (int i = 0; i < 2; ++i) {
    const std::vector<TcpServer::LoopStats> before = stats();
    auto client = std::make_unique<BlockingClient>(address_);
    landed.push_back(landedOn(before));
    client.reset();
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  }
  EXPECT_EQ(landed, std::vector<int>({0, 1}));
}

INSTANTIATE_TEST_SUITE_P(Backends, TcpServerHandOverTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
