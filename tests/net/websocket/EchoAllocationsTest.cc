// Heap allocations the WebSocket server's loop thread makes per echoed
// message once the connection is warm (the Receiver's payload, the output
// staging buffer and the connection's buffers have their capacity): none
// per message, on each backend, for small and 16 KiB messages (measured:
// 0 in 2,000 on epoll; 2 in 2,000 on io_uring, the loop's own, not one per
// message). The test counts the loop thread's calls of the global operator
// new (tests/net/AllocationCounter.h). Not under the sanitizers, which bring
// their own allocator.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/http/HttpServer.h"
#include "net/websocket/WebSocketServer.h"
#include "tests/net/AllocationCounter.h"
#include "tests/net/TestUtil.h"
#include "tests/net/websocket/HandMadeClient.h"

namespace libnet::ws {
namespace {

using test::BlockingClient;
using test::runSync;

class EchoAllocationsTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    if (!test::kCountingAllocations) GTEST_SKIP() << "the sanitizers bring their own allocator";
    thread_ = std::make_unique<EventLoopThread>(nullptr, "ws-alloc", GetParam());
    loop_ = thread_->startLoop();
    runSync(loop_, [this] {
      server_ = std::make_unique<http::HttpServer>(loop_, InetAddress("127.0.0.1", 0), "ws");
      serve(*server_, "", {},
            {.onMessage = [](const WebSocketPtr& ws, MessageType type, std::string_view payload) {
              (void)ws->send(type, payload);
            }});
      server_->start();
    });
  }

  void TearDown() override {
    if (loop_ != nullptr) runSync(loop_, [this] { server_.reset(); });
    thread_.reset();
  }

  // Echoes `count` messages of `size` bytes one after another; false if one
  // did not come back whole.
  static bool echo(BlockingClient& client, size_t size, int count) {
    const std::string frame = test::clientFrame(0x2, std::string(size, 'm'));
    const size_t echoed = size + (size < 126 ? 2 : 4);
    for (int i = 0; i < count; ++i) {
      if (!client.sendAll(frame) || client.recvExactly(echoed).size() != echoed) return false;
    }
    return true;
  }

  long countEchoes(BlockingClient& client, size_t size, int count) {
    runSync(loop_, [] { test::setCountingAllocations(true); });
    const long before = test::countedAllocations();
    EXPECT_TRUE(echo(client, size, count));
    const long made = test::countedAllocations() - before;
    runSync(loop_, [] { test::setCountingAllocations(false); });
    return made;
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<http::HttpServer> server_;
};

TEST_P(EchoAllocationsTest, AWarmConnectionEchoesWithoutAllocating) {
  BlockingClient client(server_->listenAddress());
  ASSERT_TRUE(client.sendAll(test::upgradeRequest()));
  const std::string head = test::readUpgradeHead(client);
  ASSERT_EQ(head.rfind("HTTP/1.1 101 ", 0), 0u) << head;
  for (const size_t size : {32, 16 * 1024}) {
    ASSERT_TRUE(echo(client, size, 200));  // warm up: every buffer at its size
    EXPECT_LT(countEchoes(client, size, 2000), 20) << size << "-byte messages";
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, EchoAllocationsTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::ws
