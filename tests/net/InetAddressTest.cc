#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "net/InetAddress.h"

namespace libnet {
namespace {

TEST(InetAddressTest, WildcardAndLoopbackConstructors) {
  EXPECT_EQ(InetAddress(8080).toIpPort(), "0.0.0.0:8080");
  EXPECT_EQ(InetAddress(80, true).toIpPort(), "127.0.0.1:80");
  EXPECT_EQ(InetAddress(80, false, true).toIpPort(), "[::]:80");
  EXPECT_EQ(InetAddress(80, true, true).toIpPort(), "[::1]:80");
  EXPECT_EQ(InetAddress().port(), 0);
  EXPECT_EQ(InetAddress(1, true).family(), AF_INET);
  EXPECT_EQ(InetAddress(1, true, true).family(), AF_INET6);
}

TEST(InetAddressTest, ParsesIpv4) {
  const InetAddress addr("127.0.0.1", 80);
  EXPECT_EQ(addr.family(), AF_INET);
  EXPECT_EQ(addr.port(), 80);
  EXPECT_EQ(addr.toIp(), "127.0.0.1");
  EXPECT_EQ(addr.toIpPort(), "127.0.0.1:80");
  EXPECT_EQ(addr.sockLen(), sizeof(sockaddr_in));
  const auto* sin = reinterpret_cast<const sockaddr_in*>(addr.sockAddr());
  EXPECT_EQ(sin->sin_family, AF_INET);
  EXPECT_EQ(ntohs(sin->sin_port), 80);
  EXPECT_EQ(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);

  EXPECT_EQ(InetAddress("255.255.255.255", 65535).toIpPort(), "255.255.255.255:65535");
  EXPECT_EQ(InetAddress("0.0.0.0", 0).toIpPort(), "0.0.0.0:0");
}

TEST(InetAddressTest, ParsesIpv6) {
  const InetAddress addr("::1", 80);
  EXPECT_EQ(addr.family(), AF_INET6);
  EXPECT_EQ(addr.port(), 80);
  EXPECT_EQ(addr.toIp(), "::1");
  EXPECT_EQ(addr.toIpPort(), "[::1]:80");
  EXPECT_EQ(addr.sockLen(), sizeof(sockaddr_in6));
  const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(addr.sockAddr());
  EXPECT_EQ(sin6->sin6_family, AF_INET6);
  EXPECT_EQ(ntohs(sin6->sin6_port), 80);
  EXPECT_EQ(std::memcmp(&sin6->sin6_addr, &in6addr_loopback, sizeof(in6_addr)), 0);

  // The canonical text form is printed.
  EXPECT_EQ(InetAddress("2001:0db8:0000:0000:0000:0000:0000:0001", 443).toIpPort(),
            "[2001:db8::1]:443");
  EXPECT_EQ(InetAddress("::ffff:1.2.3.4", 1).toIp(), "::ffff:1.2.3.4");
}

TEST(InetAddressTest, AcceptsBracketedIpv6) {
  const InetAddress bracketed("[::1]", 80);
  EXPECT_EQ(bracketed.family(), AF_INET6);
  EXPECT_EQ(bracketed.toIpPort(), "[::1]:80");
  EXPECT_EQ(bracketed, InetAddress("::1", 80));
  ASSERT_TRUE(InetAddress::parse("[fe80::1]", 9).has_value());
  EXPECT_EQ(InetAddress::parse("[fe80::1]", 9)->toIpPort(), "[fe80::1]:9");
}

TEST(InetAddressTest, ParseReturnsValueForGoodInput) {
  const auto v4 = InetAddress::parse("10.1.2.3", 1234);
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->toIpPort(), "10.1.2.3:1234");
  const auto v6 = InetAddress::parse("::", 1);
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->toIpPort(), "[::]:1");
}

class InetAddressBadTextTest : public ::testing::TestWithParam<const char*> {};

TEST_P(InetAddressBadTextTest, ParseGivesNullopt) {
  EXPECT_EQ(InetAddress::parse(GetParam(), 80), std::nullopt);
}

TEST_P(InetAddressBadTextTest, ConstructorThrowsNamingTheText) {
  const std::string bad = GetParam();
  try {
    const InetAddress addr(bad, 80);
    ADD_FAILURE() << "no exception for '" << bad << "', got " << addr.toIpPort();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(BadText, InetAddressBadTextTest,
                         ::testing::Values("300.1.1.1", "abc", "", "1.2.3", "::g", "1.2.3.4.5",
                                           "[127.0.0.1]", "1.2.3.4 ", " 1.2.3.4", "[::1", "::1]",
                                           "[]", "localhost", "1.2.3.-4", ":::",
                                           "aaaa:bbbb:cccc:dddd:eeee:ffff:0000:1111:2222:3333"));

TEST(InetAddressTest, ParseRejectsEmbeddedNul) {
  EXPECT_EQ(InetAddress::parse(std::string_view("1.2.3.4\0junk", 12), 80), std::nullopt);
  EXPECT_THROW(InetAddress(std::string_view("::1\0", 4), 80), std::invalid_argument);
}

TEST(InetAddressTest, ParsePort) {
  EXPECT_EQ(InetAddress::parsePort("0"), uint16_t{0});
  EXPECT_EQ(InetAddress::parsePort("80"), uint16_t{80});
  EXPECT_EQ(InetAddress::parsePort("65535"), uint16_t{65535});
  EXPECT_EQ(InetAddress::parsePort("00080"), uint16_t{80});
  for (const char* bad : {"65536", "-1", "", "12a", "a12", " 80", "80 ", "+80",
                          "99999999999999999999", "0x10", "8.0"}) {
    EXPECT_EQ(InetAddress::parsePort(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(InetAddressTest, ParseHostPortNumeric) {
  const auto v4 = InetAddress::parseHostPort("127.0.0.1:8080");
  ASSERT_TRUE(v4.has_value());
  EXPECT_EQ(v4->toIpPort(), "127.0.0.1:8080");
  EXPECT_EQ(*v4, InetAddress("127.0.0.1", 8080));

  const auto v6 = InetAddress::parseHostPort("[::1]:9");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->family(), AF_INET6);
  EXPECT_EQ(v6->toIpPort(), "[::1]:9");
}

TEST(InetAddressTest, ParseHostPortResolvesLocalhost) {
  const auto addr = InetAddress::parseHostPort("localhost:80");
  ASSERT_TRUE(addr.has_value());
  EXPECT_EQ(addr->port(), 80);
  if (addr->family() == AF_INET) {
    // 127.0.0.0/8
    const auto* sin = reinterpret_cast<const sockaddr_in*>(addr->sockAddr());
    EXPECT_EQ(ntohl(sin->sin_addr.s_addr) >> 24, 127u) << addr->toIpPort();
  } else {
    ASSERT_EQ(addr->family(), AF_INET6);
    EXPECT_EQ(addr->toIp(), "::1");
  }
}

TEST(InetAddressTest, ParseHostPortRejectsMalformed) {
  for (const char* bad : {"127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:x", "::1:80",
                          "[::1]", "[::1]:", ":80x"}) {
    EXPECT_EQ(InetAddress::parseHostPort(bad), std::nullopt) << "'" << bad << "'";
  }
}

TEST(InetAddressTest, ResolveNumericNeedsNoLookup) {
  const auto addr = InetAddress::resolve("192.0.2.1", 7);
  ASSERT_TRUE(addr.has_value());
  EXPECT_EQ(addr->toIpPort(), "192.0.2.1:7");
}

TEST(InetAddressTest, Equality) {
  EXPECT_EQ(InetAddress("127.0.0.1", 80), InetAddress(80, true));
  EXPECT_EQ(InetAddress("::1", 80), InetAddress(80, true, true));
  EXPECT_NE(InetAddress("127.0.0.1", 80), InetAddress("127.0.0.1", 81));
  EXPECT_NE(InetAddress("127.0.0.1", 80), InetAddress("127.0.0.2", 80));
  EXPECT_NE(InetAddress("::1", 80), InetAddress("::2", 80));
  // Same port, different family.
  EXPECT_NE(InetAddress("0.0.0.0", 80), InetAddress("::", 80));
  EXPECT_NE(InetAddress("::ffff:127.0.0.1", 80), InetAddress("127.0.0.1", 80));
}

TEST(InetAddressTest, SetSockAddrRoundTrip) {
  for (const InetAddress& original :
       {InetAddress("10.0.0.1", 1000), InetAddress("fe80::2", 2000)}) {
    sockaddr_storage storage{};
    std::memcpy(&storage, original.sockAddr(), original.sockLen());
    InetAddress copy;
    copy.setSockAddr(storage);
    EXPECT_EQ(copy, original);
    EXPECT_EQ(copy.toIpPort(), original.toIpPort());
    EXPECT_EQ(copy.sockLen(), original.sockLen());
  }
}

TEST(InetAddressTest, FromSockaddrStructs) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(5);
  sin.sin_addr.s_addr = htonl(0x7f000002);
  EXPECT_EQ(InetAddress(sin).toIpPort(), "127.0.0.2:5");
  sockaddr_in6 sin6{};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(6);
  sin6.sin6_addr = in6addr_loopback;
  EXPECT_EQ(InetAddress(sin6).toIpPort(), "[::1]:6");
}

TEST(InetAddressTest, WildcardIsOnlyTheAnyAddress) {
  EXPECT_TRUE(InetAddress(80).isWildcard());
  EXPECT_TRUE(InetAddress(80, false, true).isWildcard());
  EXPECT_FALSE(InetAddress(80, true).isWildcard());
  EXPECT_FALSE(InetAddress(80, true, true).isWildcard());
  EXPECT_FALSE(InetAddress("10.0.0.1", 80).isWildcard());
  EXPECT_TRUE(InetAddress("::", 80).isWildcard());
}

}  // namespace
}  // namespace libnet
