// Acceptor when the process runs out of fds: the pending connection is
// accepted and closed (the peer sees EOF), the loop does not spin, and once
// fds are free again new connections are served. A binary of its own because
// it lowers RLIMIT_NOFILE for the whole process.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
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
  const InetAddress address = runSync(loop, [&] { return server->listenAddress(); });

  // Use up every fd but one, which the client socket takes.
  std::vector<UniqueFd> filler;
  for (;;) {
    UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!fd) break;
    filler.push_back(std::move(fd));
  }
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

INSTANTIATE_TEST_SUITE_P(Backends, AcceptorEmfileTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
