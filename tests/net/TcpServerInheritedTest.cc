// TcpServer on listening sockets it did not bind (inherited: net/ListenFds.h),
// on every backend: which loop accepts on which socket, sockets shared by
// several loops, and what the server leaves of a Unix socket's file.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "base/UniqueFd.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/Socket.h"
#include "net/SocketAddress.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

// A socket bound to an ephemeral loopback port (or `address`) and listening,
// as a parent process would pass it on.
UniqueFd listeningSocket(const SocketAddress& address = InetAddress(0, true)) {
  Socket socket = Socket::createNonblocking(address.family());
  socket.setReuseAddr(true);
  socket.bindAddress(address);
  socket.listen();
  return socket.releaseFd();
}

class TcpServerInheritedTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "server", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    stopServer();
    thread_.reset();
  }

  // An echo server on `sockets` (their addresses kept in addresses_).
  void startServer(std::vector<UniqueFd> sockets, const TcpServer::Options& options) {
    for (const UniqueFd& fd : sockets) addresses_.push_back(Socket::localAddress(fd.get()));
    runSync(loop_, [&] {
      server_ = std::make_unique<TcpServer>(loop_, std::move(sockets), "inherited", options);
      server_->setMessageCallback(
          [](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) { conn->send(buf); });
      server_->start();
    });
  }

  void stopServer() {
    if (server_) runSync(loop_, [&] { server_.reset(); });
  }

  // `count` connections to socket `index`, each echoing once, all held open
  // until the server has counted them.
  void connectTo(size_t index, int count) {
    std::vector<std::unique_ptr<BlockingClient>> clients;
    for (int i = 0; i < count; ++i) {
      clients.push_back(std::make_unique<BlockingClient>(addresses_[index]));
      const std::string message = "socket " + std::to_string(index) + " #" + std::to_string(i);
      ASSERT_TRUE(clients.back()->sendAll(message));
      ASSERT_EQ(clients.back()->recvExactly(message.size()), message);
    }
  }

  std::vector<uint64_t> acceptedPerLoop() {
    std::vector<uint64_t> accepted;
    for (const TcpServer::LoopStats& s : runSync(loop_, [&] { return server_->loopStats(); })) {
      accepted.push_back(s.accepted);
    }
    return accepted;
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  std::vector<SocketAddress> addresses_;
};

TEST_P(TcpServerInheritedTest, WithoutThreadsTheServerLoopAcceptsOnEverySocket) {
  std::vector<UniqueFd> sockets;
  sockets.push_back(listeningSocket());
  sockets.push_back(listeningSocket());
  const std::vector<int> fds{sockets[0].get(), sockets[1].get()};
  startServer(std::move(sockets), {});
  EXPECT_EQ(runSync(loop_, [&] { return server_->listenAddress(); }), addresses_[0]);
  EXPECT_EQ(runSync(loop_, [&] { return server_->listeningFds(); }), fds);
  connectTo(0, 3);
  connectTo(1, 4);
  EXPECT_TRUE(waitUntil([&] { return acceptedPerLoop() == std::vector<uint64_t>{7}; }));
}

TEST_P(TcpServerInheritedTest, PerLoopLoopsShareOneSocket) {
  std::vector<UniqueFd> sockets;
  sockets.push_back(listeningSocket());
  const int fd = sockets[0].get();
  startServer(std::move(sockets), {.threads = 3});
  // The socket itself, once: the other loops' copies are not passed on.
  EXPECT_EQ(runSync(loop_, [&] { return server_->listeningFds(); }), std::vector<int>{fd});
  connectTo(0, 30);
  EXPECT_TRUE(waitUntil([&] {
    const std::vector<uint64_t> accepted = acceptedPerLoop();
    return accepted.size() == 3 && accepted[0] + accepted[1] + accepted[2] == 30;
  }));
}

TEST_P(TcpServerInheritedTest, PerLoopSocketKGoesToLoopKModuloLoops) {
  std::vector<UniqueFd> sockets;
  for (int i = 0; i < 3; ++i) sockets.push_back(listeningSocket());
  startServer(std::move(sockets), {.threads = 2});
  EXPECT_EQ(runSync(loop_, [&] { return server_->listeningFds().size(); }), 3u);
  connectTo(0, 2);  // loop 0
  connectTo(1, 3);  // loop 1
  connectTo(2, 5);  // loop 0
  EXPECT_TRUE(waitUntil([&] {
    return acceptedPerLoop() == std::vector<uint64_t>{7, 3};
  })) << acceptedPerLoop()[0]
      << " " << acceptedPerLoop()[1];
}

TEST_P(TcpServerInheritedTest, HandOverAcceptsOnTheServerLoopAndSpreads) {
  std::vector<UniqueFd> sockets;
  sockets.push_back(listeningSocket());
  sockets.push_back(listeningSocket());
  startServer(std::move(sockets), {.threads = 2, .acceptMode = TcpServer::AcceptMode::kHandOver});
  connectTo(0, 3);
  connectTo(1, 3);
  EXPECT_TRUE(waitUntil([&] { return acceptedPerLoop() == std::vector<uint64_t>{3, 3}; }));
}

TEST_P(TcpServerInheritedTest, AUnixSocketsFileIsLeftInPlace) {
  // Short: the test's temporary directory can be longer than sun_path.
  char dir[] = "/tmp/libnet-inherited-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/s.sock";
  std::vector<UniqueFd> sockets;
  sockets.push_back(listeningSocket(SocketAddress::unixPath(path)));
  startServer(std::move(sockets), {.threads = 1});
  connectTo(0, 2);
  stopServer();
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << "the inherited socket's file was removed";
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST_P(TcpServerInheritedTest, RefusesNoSocketOrOneThatDoesNotListen) {
  EXPECT_THROW(runSync(loop_, [&] { TcpServer(loop_, std::vector<UniqueFd>{}, "none"); }),
               std::invalid_argument);
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd other(pair[1]);
  std::vector<UniqueFd> sockets;
  sockets.emplace_back(pair[0]);
  EXPECT_THROW(runSync(loop_, [&] { TcpServer(loop_, std::move(sockets), "connected"); }),
               std::system_error);
}

// A drain stops every acceptor, the shared sockets' copies included: once it
// is done, nothing listens (the test holds no other copy of the sockets).
void expectDrainClosesEverySocket(TcpServerInheritedTest* test, EventLoop* loop, TcpServer* server,
                                  const std::vector<SocketAddress>& addresses) {
  std::promise<void> drained;
  runSync(loop, [&] { server->drain(std::chrono::seconds(5), [&] { drained.set_value(); }); });
  ASSERT_EQ(drained.get_future().wait_for(test::kWait), std::future_status::ready);
  // Nothing to pass on any more.
  EXPECT_TRUE(runSync(loop, [&] { return server->listeningFds(); }).empty());
  for (const SocketAddress& address : addresses) {
    EXPECT_THROW(BlockingClient client(address), std::runtime_error) << address.toIpPort();
  }
  (void)test;
}

TEST_P(TcpServerInheritedTest, DrainStopsEveryPerLoopAcceptor) {
  std::vector<UniqueFd> sockets;
  for (int i = 0; i < 3; ++i) sockets.push_back(listeningSocket());
  startServer(std::move(sockets), {.threads = 2});
  connectTo(1, 2);
  expectDrainClosesEverySocket(this, loop_, server_.get(), addresses_);
}

TEST_P(TcpServerInheritedTest, DrainStopsEveryServerLoopAcceptor) {
  std::vector<UniqueFd> sockets;
  sockets.push_back(listeningSocket());
  sockets.push_back(listeningSocket());
  startServer(std::move(sockets), {.threads = 1, .acceptMode = TcpServer::AcceptMode::kHandOver});
  connectTo(1, 2);
  expectDrainClosesEverySocket(this, loop_, server_.get(), addresses_);
}

TEST_P(TcpServerInheritedTest, DrainOfOneSocketSharedByThreeLoops) {
  std::vector<UniqueFd> sockets;
  sockets.push_back(listeningSocket());
  startServer(std::move(sockets), {.threads = 3});
  connectTo(0, 6);
  expectDrainClosesEverySocket(this, loop_, server_.get(), addresses_);
}

INSTANTIATE_TEST_SUITE_P(Backends, TcpServerInheritedTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
