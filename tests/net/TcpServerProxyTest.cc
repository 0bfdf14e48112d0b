// TcpServer with Options::proxyProtocol, on real loopback sockets, on every
// backend, with and without I/O threads: what the connection sees as its
// peer and local address, what happens to the bytes behind the header, and
// what is refused.
#include <gtest/gtest.h>
#include <netinet/tcp.h>

#include <chrono>
#include <string>
#include <vector>

#include "net/ProxyProtocol.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};

std::string v2Header(unsigned char verCmd, unsigned char family, const std::string& block) {
  std::string h(kV2Signature);
  h += static_cast<char>(verCmd);
  h += static_cast<char>(family);
  h += static_cast<char>((block.size() >> 8) & 0xff);
  h += static_cast<char>(block.size() & 0xff);
  return h + block;
}

// 203.0.113.9:40000 -> 198.51.100.1:443
std::string v2Ipv4() {
  const unsigned char b[] = {203, 0, 113, 9, 198, 51, 100, 1, 0x9c, 0x40, 0x01, 0xbb};
  return v2Header(0x21, 0x11, std::string(reinterpret_cast<const char*>(b), sizeof b));
}

// [2001:db8::9]:40000 -> [2001:db8::1]:8443, with a TLV behind the addresses.
std::string v2Ipv6() {
  std::string block(36, '\0');
  const unsigned char prefix[] = {0x20, 0x01, 0x0d, 0xb8};
  block.replace(0, 4, reinterpret_cast<const char*>(prefix), 4);
  block.replace(16, 4, reinterpret_cast<const char*>(prefix), 4);
  block[15] = 9;
  block[31] = 1;
  block[32] = static_cast<char>(0x9c);
  block[33] = 0x40;
  block[34] = 0x20;
  block[35] = static_cast<char>(0xfb);
  return v2Header(0x21, 0x21, block + std::string("\x04\x00\x01x", 4));
}

class TcpServerProxyTest : public test::EchoServerTest {
 protected:
  // An echo server that first tells each client "peer local\n" as its
  // connection sees them.
  void startProxyServer(int threads, std::vector<std::string> trusted = {},
                        Duration timeout = std::chrono::seconds(5),
                        TcpServer::AcceptMode mode = TcpServer::AcceptMode::kPerLoop) {
    TcpServer::Options options{.threads = threads, .acceptMode = mode};
    options.proxyProtocol.enabled = true;
    options.proxyProtocol.headerTimeout = timeout;
    for (const std::string& t : trusted) {
      options.proxyProtocol.trusted.push_back(*ProxyProtocol::TrustedSource::parse(t));
    }
    startServer(
        [this](TcpServer& server) {
          server.setConnectionCallback([this](const TcpConnectionPtr& conn) {
            if (!conn->connected()) {
              downs_.fetch_add(1);
              return;
            }
            ups_.fetch_add(1);
            conn->send(conn->peerAddress().toIpPort() + " " + conn->localAddress().toIpPort() +
                       "\n");
          });
        },
        options);
  }

  // The first line the server sends (without its newline); empty if none.
  static std::string readLine(BlockingClient& client) {
    std::string line;
    for (;;) {
      const std::string c = client.recvExactly(1);
      if (c.empty() || c == "\n") return line;
      line += c;
    }
  }

  static std::string self(const BlockingClient& client, bool local) {
    sockaddr_storage storage{};
    socklen_t len = sizeof storage;
    auto* sa = reinterpret_cast<sockaddr*>(&storage);
    if ((local ? ::getsockname(client.fd(), sa, &len) : ::getpeername(client.fd(), sa, &len)) != 0)
      return "";
    return SocketAddress::fromSockAddr(storage, len).toIpPort();
  }

  uint64_t rejected() {
    return runSync(loop_, [&] {
      uint64_t total = 0;
      for (const TcpServer::LoopStats& s : server_->loopStats()) total += s.proxyRejected;
      return total;
    });
  }

  // Expects the server to close `client` without a byte.
  static void expectClosed(BlockingClient& client) {
    bool eof = false;
    EXPECT_EQ(client.recvUntilEof(&eof), "");
  }
};

const int kThreadCounts[] = {0, 2};

TEST_P(TcpServerProxyTest, V1GivesTheProxiedAddressesAndKeepsThePayload) {
  for (const int threads : kThreadCounts) {
    startProxyServer(threads);
    BlockingClient client(address_);
    // The payload rides in the same segment as the header.
    ASSERT_TRUE(client.sendAll("PROXY TCP4 192.0.2.7 198.51.100.1 51234 443\r\nhello"));
    EXPECT_EQ(readLine(client), "192.0.2.7:51234 198.51.100.1:443") << threads;
    EXPECT_EQ(client.recvExactly(5), "hello");
    EXPECT_EQ(rejected(), 0u);
    stopServer();
  }
}

// Handed over to I/O loops (ring to ring on io_uring, else through their
// queues), each socket still waits for its header on the loop that serves it.
TEST_P(TcpServerProxyTest, HandOverModeReadsTheHeaderOnTheIoLoop) {
  startProxyServer(2, {}, std::chrono::seconds(5), TcpServer::AcceptMode::kHandOver);
  for (int i = 0; i < 4; ++i) {
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(v2Ipv4() + "p" + std::to_string(i)));
    EXPECT_EQ(readLine(client), "203.0.113.9:40000 198.51.100.1:443");
    EXPECT_EQ(client.recvExactly(2), "p" + std::to_string(i));
  }
  const std::vector<TcpServer::LoopStats> stats =
      runSync(loop_, [&] { return server_->loopStats(); });
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].accepted + stats[1].accepted, 4u);
}

TEST_P(TcpServerProxyTest, V2Ipv4AndIpv6) {
  for (const int threads : kThreadCounts) {
    startProxyServer(threads);
    BlockingClient v4(address_);
    ASSERT_TRUE(v4.sendAll(v2Ipv4() + "abc"));
    EXPECT_EQ(readLine(v4), "203.0.113.9:40000 198.51.100.1:443");
    EXPECT_EQ(v4.recvExactly(3), "abc");
    BlockingClient v6(address_);
    ASSERT_TRUE(v6.sendAll(v2Ipv6() + "xyz"));
    EXPECT_EQ(readLine(v6), "[2001:db8::9]:40000 [2001:db8::1]:8443");
    EXPECT_EQ(v6.recvExactly(3), "xyz");
    stopServer();
  }
}

TEST_P(TcpServerProxyTest, LocalAndUnknownKeepTheSocketsAddresses) {
  startProxyServer(0);
  for (const std::string& header : {v2Header(0x20, 0x00, ""), std::string("PROXY UNKNOWN\r\n")}) {
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(header + "ok"));
    EXPECT_EQ(readLine(client), self(client, true) + " " + self(client, false));
    EXPECT_EQ(client.recvExactly(2), "ok");
  }
}

TEST_P(TcpServerProxyTest, HeaderSplitAcrossWritesByteByByte) {
  for (const int threads : kThreadCounts) {
    startProxyServer(threads);
    for (const std::string& header :
         {std::string("PROXY TCP6 2001:db8::5 2001:db8::1 1 2\r\n"), v2Ipv4()}) {
      BlockingClient client(address_);
      // Each byte its own segment (no Nagle delay): the server sees the
      // header grow, and any prefix must leave it waiting.
      const int one = 1;
      ::setsockopt(client.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      for (const char c : header) ASSERT_TRUE(client.sendAll(std::string(1, c)));
      ASSERT_TRUE(client.sendAll("tail"));
      const std::string line = readLine(client);
      EXPECT_TRUE(line == "[2001:db8::5]:1 [2001:db8::1]:2" ||
                  line == "203.0.113.9:40000 198.51.100.1:443")
          << line;
      EXPECT_EQ(client.recvExactly(4), "tail");
    }
    stopServer();
  }
}

TEST_P(TcpServerProxyTest, MalformedOrMissingHeaderIsClosedAndCounted) {
  for (const int threads : kThreadCounts) {
    startProxyServer(threads);
    const std::vector<std::string> bad = {
        "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 99999\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n",
        v2Header(0x22, 0x11, std::string(12, '\0')),
    };
    for (const std::string& bytes : bad) {
      BlockingClient client(address_);
      ASSERT_TRUE(client.sendAll(bytes));
      expectClosed(client);
    }
    // One that closes its side halfway through the header.
    {
      BlockingClient client(address_);
      ASSERT_TRUE(client.sendAll("PROXY TCP4 1.2."));
      client.shutdownWrite();
      expectClosed(client);
    }
    EXPECT_TRUE(waitUntil([&] { return rejected() == bad.size() + 1; })) << rejected();
    EXPECT_EQ(ups_.load(), 0);
    stopServer();
  }
}

TEST_P(TcpServerProxyTest, SilentPeerIsClosedAtTheDeadline) {
  startProxyServer(0, {}, std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  BlockingClient silent(address_);
  BlockingClient partial(address_);
  ASSERT_TRUE(partial.sendAll("PROXY TCP4 "));
  expectClosed(silent);
  expectClosed(partial);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::seconds(4));  // well before the client's own 5 s timeout
  EXPECT_TRUE(waitUntil([&] { return rejected() == 2; }));
}

TEST_P(TcpServerProxyTest, UntrustedPeerIsServedDirectlyAndItsHeaderIsData) {
  for (const int threads : kThreadCounts) {
    // 127.0.0.1 is not 10.0.0.0/8: the header is the application's data.
    startProxyServer(threads, {"10.0.0.0/8"});
    BlockingClient client(address_);
    const std::string forged = "PROXY TCP4 9.9.9.9 9.9.9.9 1 2\r\n";
    ASSERT_TRUE(client.sendAll(forged));
    EXPECT_EQ(readLine(client), self(client, true) + " " + self(client, false));
    EXPECT_EQ(client.recvExactly(forged.size()), forged);
    stopServer();
    // Listed (as a prefix of loopback): its header is read.
    startProxyServer(threads, {"10.0.0.0/8", "127.0.0.0/8"});
    BlockingClient proxied(address_);
    ASSERT_TRUE(proxied.sendAll(forged + "z"));
    EXPECT_EQ(readLine(proxied), "9.9.9.9:1 9.9.9.9:2");
    EXPECT_EQ(proxied.recvExactly(1), "z");
    stopServer();
  }
}

TEST_P(TcpServerProxyTest, OptionOffHeaderIsData) {
  startServer();  // the plain echo server
  BlockingClient client(address_);
  const std::string header = "PROXY TCP4 9.9.9.9 9.9.9.9 1 2\r\n" + v2Ipv4();
  ASSERT_TRUE(client.sendAll(header));
  EXPECT_EQ(client.recvExactly(header.size()), header);
}

TEST_P(TcpServerProxyTest, DestroyedWithSocketsStillWaiting) {
  for (const int threads : kThreadCounts) {
    startProxyServer(threads);
    const int fdsBefore = test::openFdCount();
    std::vector<std::unique_ptr<BlockingClient>> clients;
    for (int i = 0; i < 8; ++i) {
      clients.push_back(std::make_unique<BlockingClient>(address_));
      ASSERT_TRUE(clients.back()->sendAll("PROXY TCP4 1.2"));
    }
    stopServer();
    for (auto& client : clients) expectClosed(*client);
    EXPECT_EQ(ups_.load(), 0);
    // The clients' own sockets are still open; the server's are gone.
    EXPECT_TRUE(waitUntil([&] { return test::openFdCount() <= fdsBefore + 8; }));
  }
}

TEST(TcpServerProxyOptionsTest, NonPositiveTimeoutIsRefused) {
  EventLoop loop;
  TcpServer::Options options;
  options.proxyProtocol.enabled = true;
  options.proxyProtocol.headerTimeout = Duration::zero();
  EXPECT_THROW(TcpServer(&loop, InetAddress(0, true), "x", options), std::invalid_argument);
}

TEST(TrustedSourceTest, ParsesAndMatches) {
  using T = ProxyProtocol::TrustedSource;
  EXPECT_FALSE(T::parse("10.0.0.0/33"));
  EXPECT_FALSE(T::parse("10.0.0.0/"));
  EXPECT_FALSE(T::parse("10.0.0.0/a"));
  EXPECT_FALSE(T::parse("host"));
  EXPECT_FALSE(T::parse("::1/129"));
  const auto net10 = T::parse("10.0.0.0/8");
  ASSERT_TRUE(net10);
  EXPECT_EQ(net10->toString(), "10.0.0.0/8");
  EXPECT_TRUE(net10->contains(InetAddress("10.200.3.4", 1)));
  EXPECT_TRUE(net10->contains(InetAddress("::ffff:10.1.1.1", 1)));
  EXPECT_FALSE(net10->contains(InetAddress("11.0.0.1", 1)));
  EXPECT_FALSE(net10->contains(SocketAddress::unixAbstract("x")));
  const auto one = T::parse("127.0.0.2");
  EXPECT_TRUE(one->contains(InetAddress("127.0.0.2", 9)));
  EXPECT_FALSE(one->contains(InetAddress("127.0.0.1", 9)));
  const auto odd = T::parse("192.168.4.0/22");
  EXPECT_TRUE(odd->contains(InetAddress("192.168.7.255", 1)));
  EXPECT_FALSE(odd->contains(InetAddress("192.168.8.0", 1)));
  const auto v6 = T::parse("fd00::/8");
  EXPECT_TRUE(v6->contains(InetAddress("fdab::1", 1)));
  EXPECT_FALSE(v6->contains(InetAddress("fe80::1", 1)));
  EXPECT_TRUE(T::parse("::/0")->contains(InetAddress("1.2.3.4", 1)));
}

INSTANTIATE_TEST_SUITE_P(Backends, TcpServerProxyTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
