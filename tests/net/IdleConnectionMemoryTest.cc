// What an idle connection costs its server in heap memory, on each backend:
// the bytes the server's loop thread leaves allocated per connection after
// each of kConnections clients has echoed one 64-byte message and gone quiet
// (the load of bench/memory/conn_memory.py, which measures the same as RSS).
// Counted by tests/net/AllocationCounter (malloc's usable size plus chunk
// header of every block, less what is freed), so the connection, its I/O
// strategy, its name and callbacks, and the server's list of connections are
// all in it; kernel memory (socket buffers, epoll and io_uring entries) is
// not, as it is not in RSS. Not under the sanitizers, which bring their own
// allocator. docs/benchmarks.md, "Memory per idle connection", says where
// each byte goes.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <memory>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/coro/Coro.h"
#include "tests/net/AllocationCounter.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

constexpr int kWarmUp = 20;
constexpr int kConnections = 1000;

// Raises the soft fd limit to what `needed` takes, if the hard one allows.
bool haveFds(rlim_t needed) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= needed) return true;
  if (limit.rlim_max < needed) return false;
  limit.rlim_cur = needed;
  return ::setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

std::unique_ptr<BlockingClient> echoedOnce(const SocketAddress& address) {
  auto client = std::make_unique<BlockingClient>(address);
  const std::string message(64, 'x');
  EXPECT_TRUE(client->sendAll(message));
  EXPECT_EQ(client->recvExactly(message.size()), message);
  return client;
}

class IdleConnectionMemoryTest : public test::EchoServerTest {
 protected:
  void SetUp() override {
    EchoServerTest::SetUp();
    if (IsSkipped()) return;
    if (!test::kCountingAllocations) GTEST_SKIP() << "the sanitizers replace the allocator";
    ASSERT_TRUE(haveFds(2 * kConnections + 200)) << "needs " << 2 * kConnections + 200 << " fds";
  }

  // Heap bytes the server's loop holds per idle connection (see the top).
  double bytesPerIdleConnection() {
    // The loop's pools, tables and scratch storage reach their working size.
    for (int i = 0; i < kWarmUp; ++i) echoedOnce(address_);
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
    runSync(loop_, [] { test::setCountingAllocations(true); });
    const long before = test::countedBytes();
    std::vector<std::unique_ptr<BlockingClient>> clients;
    clients.reserve(kConnections);
    for (int i = 0; i < kConnections; ++i) clients.push_back(echoedOnce(address_));
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == kConnections; }));
    // Whatever the last echoes queued on the loop has run.
    const long held = runSync(loop_, [] {
      test::setCountingAllocations(false);
      return test::countedBytes();
    });
    clients.clear();
    EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
    const double perConnection = static_cast<double>(held - before) / kConnections;
    RecordProperty("bytes_per_idle_connection", std::to_string(perConnection));
    // The connection is counted at all: it is at least its own object.
    EXPECT_GE(perConnection, 256.0);
    return perConnection;
  }
};

// A TcpServer's echo connection, as echo_server's.
TEST_P(IdleConnectionMemoryTest, AtMostOneKibPerIdleConnection) {
  startServer();
  EXPECT_LE(bytesPerIdleConnection(), 1024.0);
}

// coro_echo_server's: the connection, its stream's state and the echo
// coroutine's frames, suspended in a read.
coro::Task<> echo(coro::Stream stream) {
  while (coro::Input in = co_await stream.read()) {
    if (co_await stream.write(&*in) != coro::Errc::kOk) break;
  }
}

TEST_P(IdleConnectionMemoryTest, AtMostTwoKibPerIdleCoroutineConnection) {
  startServer([](TcpServer& server) { coro::serve(server, echo); });
  EXPECT_LE(bytesPerIdleConnection(), 2048.0);
}

INSTANTIATE_TEST_SUITE_P(Backends, IdleConnectionMemoryTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
