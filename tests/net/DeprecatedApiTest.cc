// The names of 0.1 kept, deprecated, for one minor version (CHANGELOG.md):
// a program written for 0.1 still compiles (this file is built with
// -Wno-deprecated-declarations, as such a program would be to silence the
// warnings) and gets what it asked for, on both backends.
#include <any>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "net/EventLoopThreadPool.h"
#include "net/InetAddress.h"
#include "net/TcpClient.h"
#include "net/TcpServer.h"
#include "net/Version.h"
#include "net/http/HttpServer.h"
#include "net/tls/TlsContext.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::runSync;

static_assert(LIBNET_VERSION_MAJOR == 0 && LIBNET_VERSION_MINOR >= 2);
static_assert(std::is_same_v<TlsContext, tls::Context>);
static_assert(std::is_same_v<TlsError, tls::Error>);
static_assert(std::is_same_v<TlsVersion, tls::Version>);

class DeprecatedApiTest : public test::EchoServerTest {};

TEST_P(DeprecatedApiTest, TcpServerSettersOf01SetTheirOptionsBeforeStart) {
  startServer([](TcpServer& server) {
    server.setThreadNum(2);
    server.setAcceptMode(TcpServer::AcceptMode::kHandOver);
    server.setTcpNoDelay(true);
    server.setMaxQueuedOutput(4096);
    server.setIdleTimeout(std::chrono::seconds(30));
    server.setDeferAccept(1);
    server.setConnectionLayer(nullptr);
    server.setConnectionCallback([](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      conn->setContext(std::string("ctx"));
      EXPECT_EQ(conn->getLoop(), conn->loop());
      EXPECT_EQ(std::any_cast<std::string>(conn->getContext()), "ctx");
      EXPECT_EQ(conn->getMutableContext(), conn->mutableContext());
    });
  });
  const TcpServer::Options options = runSync(loop_, [&] { return server_->options(); });
  EXPECT_EQ(options.threads, 2);
  EXPECT_EQ(options.acceptMode, TcpServer::AcceptMode::kHandOver);
  EXPECT_TRUE(options.tcpNoDelay);
  EXPECT_EQ(options.maxQueuedOutput, 4096u);
  EXPECT_EQ(options.idleTimeout, std::chrono::seconds(30));
  EXPECT_EQ(options.deferAccept, std::chrono::seconds(1));
  // The pool was remade with the threads asked for: two I/O loops serve.
  EXPECT_EQ(runSync(loop_, [&] { return server_->loopStats().size(); }), 2u);
  EXPECT_EQ(runSync(loop_, [&] { return server_->getLoop(); }), loop_);
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("ping"));
  EXPECT_EQ(client.recvExactly(4), "ping");
}

TEST_P(DeprecatedApiTest, TcpServerSettersCheckAsTheConstructorDoesAndNotAfterStart) {
  startServer([](TcpServer& server) {
    EXPECT_THROW(server.setThreadNum(-1), std::invalid_argument);
    EXPECT_THROW(server.setIdleTimeout(std::chrono::seconds(-1)), std::invalid_argument);
  });
  runSync(loop_, [&] {
    EXPECT_THROW(server_->setThreadNum(1), std::logic_error);
    EXPECT_THROW(server_->setTcpNoDelay(true), std::logic_error);
    EXPECT_EQ(server_->options().threads, 0);
  });
}

TEST_P(DeprecatedApiTest, HttpServerSetThreadNum) {
  runSync(loop_, [&] {
    http::HttpServerOptions options;  // the 0.1 name of HttpServer::Options
    http::HttpServer server(loop_, InetAddress(0, true), "http", options);
    server.setThreadNum(2);
    EXPECT_EQ(server.options().threads, 2);
    server.start();
    EXPECT_EQ(server.tcpServer().loopStats().size(), 2u);
    EXPECT_THROW(server.setThreadNum(1), std::logic_error);
  });
}

TEST_P(DeprecatedApiTest, TcpClientSettersOf01) {
  runSync(loop_, [&] {
    TcpClient client(loop_, InetAddress("127.0.0.1", 9), "client");
    EXPECT_FALSE(client.retry());
    client.enableRetry();
    client.setTcpNoDelay(true);
    client.setConnectionLayer(nullptr);
    EXPECT_TRUE(client.retry());
    EXPECT_TRUE(client.options().retry);
    EXPECT_TRUE(client.options().tcpNoDelay);
    EXPECT_EQ(client.getLoop(), loop_);
    client.connect();
    EXPECT_THROW(client.enableRetry(), std::logic_error);
    client.stop();
  });
}

TEST_P(DeprecatedApiTest, EventLoopThreadPoolAndInetAddressNames) {
  runSync(loop_, [&] {
    EventLoopThreadPool pool(loop_, "pool", 0);
    pool.start();
    EXPECT_EQ(pool.getNextLoop(), loop_);
    EXPECT_EQ(pool.getAllLoops(), std::vector<EventLoop*>{loop_});
  });
  const InetAddress address("127.0.0.1", 80);
  EXPECT_EQ(address.getSockAddr(), address.sockAddr());
}

INSTANTIATE_TEST_SUITE_P(Backends, DeprecatedApiTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
