// TcpClient and coro::connect by host name, end to end: dns::Resolver asks
// dnsmasq (started by the test) for loopback.dns.test, which has both ::1
// and 127.0.0.1; the server listens on 127.0.0.1 only, so Happy Eyeballs
// tries ::1 first (refused), then 127.0.0.1, which answers. On both backends.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "net/Buffer.h"
#include "net/ConnectFailure.h"
#include "net/EventLoop.h"
#include "net/TcpClient.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "net/dns/Resolver.h"
#include "tests/net/TestUtil.h"
#include "tests/net/dns/DnsServerProcess.h"

namespace libnet::test {
namespace {

using namespace std::chrono_literals;

class ConnectByNameTest : public DnsmasqSuite {
 protected:
  void SetUp() override {
    DnsmasqSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    loop_ = std::make_unique<EventLoop>(GetParam());
    dns::Resolver::Options options;
    options.servers = {dnsmasq()};
    options.useHostsFile = false;
    options.searchDomains = std::vector<std::string>{};
    resolver_ = std::make_shared<dns::Resolver>(loop_.get(), options);
    server_ = std::make_unique<TcpServer>(loop_.get(), InetAddress("127.0.0.1", 0), "echo");
    server_->setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
      conn->send(buf->retrieveAllAsString());
    });
    server_->start();
    armWatchdog(*loop_);
  }
  void TearDown() override {
    server_.reset();
    resolver_.reset();
    loop_.reset();
  }

  std::string target(const char* host) const {
    return std::string(host) + ":" + std::to_string(server_->listenAddress().port());
  }

  std::unique_ptr<EventLoop> loop_;
  std::shared_ptr<dns::Resolver> resolver_;
  std::unique_ptr<TcpServer> server_;
};

TEST_P(ConnectByNameTest, TcpClientConnectsOverTheFamilyThatAnswers) {
  TcpClient client(loop_.get(), target("loopback.dns.test"), "client",
                   TcpClient::Options{.resolver = resolver_});
  std::string echoed;
  std::optional<SocketAddress> peer;
  client.setConnectionCallback([&](const TcpConnectionPtr& conn) {
    if (!conn->connected()) return;
    peer = conn->peerAddress();
    conn->send("by name");
  });
  client.setMessageCallback([&](const TcpConnectionPtr&, Buffer* buf, Timestamp) {
    echoed += buf->retrieveAllAsString();
    if (echoed.size() >= 7) loop_->quit();
  });
  client.connect();
  loop_->loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(echoed, "by name");
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->toString(), server_->listenAddress().toString());
  EXPECT_EQ(client.connectAttempts(), 1);
}

TEST_P(ConnectByNameTest, ANameThatDoesNotExistIsReportedWithItsReason) {
  TcpClient client(loop_.get(), "no-such-host.dns.test:80", "client",
                   TcpClient::Options{.resolver = resolver_});
  std::optional<ConnectFailure> failure;
  client.setConnectFailureCallback([&](const ConnectFailure& f) { failure = f; });
  client.setConnectErrorCallback([&](int) {
    client.stop();
    loop_->quit();
  });
  client.connect();
  loop_->loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_TRUE(failure.has_value());
  EXPECT_TRUE(failure->attempts.empty());
  EXPECT_EQ(failure->ipv4.errc, ResolveErrc::kNotFound);
  EXPECT_EQ(failure->ipv6.errc, ResolveErrc::kNotFound);
  EXPECT_NE(failure->message().find("no-such-host.dns.test: NXDOMAIN"), std::string::npos)
      << failure->message();
}

coro::Task<> pingByName(EventLoop* loop, TcpClient* client, std::string* reply,
                        std::string* detail) {
  coro::ConnectResult r = co_await coro::connect(*client, 5s);
  *detail = r.detail;
  if (r) {
    co_await r.stream.write("ping");
    if (coro::Input in = co_await r.stream.readAtLeast(4)) *reply = std::string(in.view());
  }
  loop->quit();
}

TEST_P(ConnectByNameTest, CoroutineConnectByName) {
  TcpClient client(loop_.get(), target("loopback.dns.test"), "client",
                   TcpClient::Options{.resolver = resolver_});
  std::string reply;
  std::string detail;
  coro::spawn(loop_.get(), pingByName(loop_.get(), &client, &reply, &detail));
  loop_->loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(reply, "ping") << detail;
}

INSTANTIATE_TEST_SUITE_P(Backends, ConnectByNameTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet::test
