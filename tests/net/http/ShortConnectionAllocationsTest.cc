// Heap allocations the server's loop thread makes per short connection
// (accept, one GET with "Connection: close", the response, the close and the
// connection's destruction), on each backend: at most kMaxPerConnection.
// The test counts the loop thread's calls of the global operator new
// (tests/net/AllocationCounter.h); bench/alloc/allocs_per_connection.sh
// measures the same under load, counting malloc. Not under the sanitizers,
// which bring their own allocator.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/http/HttpServer.h"
#include "tests/net/AllocationCounter.h"
#include "tests/net/TestUtil.h"

namespace libnet::http {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

constexpr double kMaxPerConnection = 4.0;

class ShortConnectionAllocationsTest : public ::testing::TestWithParam<PollerKind> {};

// One short connection: the whole response, then the server's close.
void oneShortConnection(const SocketAddress& address) {
  BlockingClient client(address);
  ASSERT_TRUE(
      client.sendAll("GET /hello HTTP/1.1\r\nHost: test\r\nUser-Agent: t\r\n"
                     "Accept: */*\r\nConnection: close\r\n\r\n"));
  bool eof = false;
  const std::string response = client.recvUntilEof(&eof);
  ASSERT_TRUE(eof);
  ASSERT_EQ(response.rfind("HTTP/1.1 200 ", 0), 0u) << response;
  ASSERT_NE(response.find("hello world\n"), std::string::npos) << response;
}

TEST_P(ShortConnectionAllocationsTest, AtMostFourPerShortConnection) {
  LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
  if (!test::kCountingAllocations) GTEST_SKIP() << "the sanitizers replace the allocator";
  constexpr int kWarmUp = 50;
  constexpr int kConnections = 300;
  EventLoopThread thread(nullptr, "alloc", GetParam());
  EventLoop* loop = thread.startLoop();
  std::unique_ptr<HttpServer> server;
  runSync(loop, [&] {
    server = std::make_unique<HttpServer>(loop, InetAddress(0, true), "alloc");
    server->setHandler([](const HttpRequest&, HttpResponse* response) {
      response->setStatus(200);
      response->setBody("hello world\n");
    });
    server->start();
  });
  const SocketAddress address = runSync(loop, [&] { return server->listenAddress(); });
  // Pools and tables grow to their working size first.
  for (int i = 0; i < kWarmUp; ++i) oneShortConnection(address);
  ASSERT_TRUE(waitUntil([&] { return server->tcpServer().connectionCount() == 0; }));
  runSync(loop, [] { test::setCountingAllocations(true); });
  const long before = test::countedAllocations();
  for (int i = 0; i < kConnections; ++i) oneShortConnection(address);
  // Until each is destroyed: its teardown is part of its cost.
  ASSERT_TRUE(waitUntil([&] { return server->tcpServer().connectionCount() == 0; }));
  runSync(loop, [] { test::setCountingAllocations(false); });
  const double perConnection =
      static_cast<double>(test::countedAllocations() - before) / kConnections;
  EXPECT_LE(perConnection, kMaxPerConnection);
  // The count works at all: a connection is at least the connection itself.
  EXPECT_GE(perConnection, 1.0);
  RecordProperty("allocations_per_connection", std::to_string(perConnection));
  runSync(loop, [&] { server.reset(); });
}

INSTANTIATE_TEST_SUITE_P(Backends, ShortConnectionAllocationsTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::http
