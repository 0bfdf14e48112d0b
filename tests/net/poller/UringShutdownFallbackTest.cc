// Closing after output on an io_uring loop whose kernel lacks
// IORING_OP_SHUTDOWN (simulated through the probe, before anything asks it):
// no shutdown is linked behind the last send, and the close sends the FIN as
// before: small and large answers arrive whole, then end of file, and no fd
// is left behind.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/poller/UringProbe.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

// Before main(), so before the first probe of the process.
const bool kSimulated = [] {
  UringProbe::simulateFailure(UringProbe::Stage::kShutdownOp);
  return true;
}();

class UringShutdownFallbackTest : public test::EchoServerTest {};

TEST_P(UringShutdownFallbackTest, CloseAfterOutputStillEndsWithTheWholeAnswer) {
  ASSERT_TRUE(kSimulated);
  ASSERT_TRUE(UringProbe::result().ok);
  ASSERT_FALSE(UringProbe::result().shutdownOp);
  const int fdsBefore = test::openFdCount();
  for (const size_t size : {size_t{6}, size_t{3 * 1024 * 1024}}) {
    SCOPED_TRACE(size);
    const std::string payload = test::randomBytes(size, 47);
    std::atomic<bool> seen{false};
    startServer([&](TcpServer& server) {
      server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
        if (!conn->connected() || seen.exchange(true)) return;
        conn->send(payload);
        conn->closeAfterOutput();
      });
    });
    {
      test::BlockingClient client(address_, 16 * 1024);
      bool eof = false;
      const std::string got = client.recvUntilEof(&eof);
      EXPECT_TRUE(eof);
      ASSERT_EQ(got.size(), payload.size());
      EXPECT_TRUE(got == payload);
    }
    EXPECT_TRUE(test::waitUntil([&] { return connectionCount() == 0; }));
    stopServer();
  }
  EXPECT_TRUE(test::waitUntil([&] { return test::openFdCount() == fdsBefore; }));
}

// io_uring only: the epoll backend has no probe to simulate with.
INSTANTIATE_TEST_SUITE_P(Backends, UringShutdownFallbackTest,
                         ::testing::Values(PollerKind::kIoUring), test::pollerName);

}  // namespace
}  // namespace libnet
