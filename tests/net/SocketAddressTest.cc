#include "net/SocketAddress.h"

#include <gtest/gtest.h>
#include <sys/un.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace libnet {
namespace {

TEST(SocketAddressTest, AnInetAddressConvertsAndKeepsItsAccessors) {
  const SocketAddress address = InetAddress("127.0.0.1", 8080);
  EXPECT_EQ(address.family(), AF_INET);
  EXPECT_FALSE(address.isUnix());
  EXPECT_EQ(address.toString(), "127.0.0.1:8080");
  EXPECT_EQ(address.toIpPort(), "127.0.0.1:8080");
  EXPECT_EQ(address.toIp(), "127.0.0.1");
  EXPECT_EQ(address.port(), 8080);
  ASSERT_TRUE(address.inet());
  EXPECT_EQ(*address.inet(), InetAddress("127.0.0.1", 8080));
  EXPECT_EQ(address.sockLen(), sizeof(sockaddr_in));
  EXPECT_EQ(SocketAddress(InetAddress("::1", 80)).toString(), "[::1]:80");
  EXPECT_TRUE(SocketAddress(InetAddress(0)).isWildcard());
}

TEST(SocketAddressTest, APathCountsItsNulAndPrintsWithTheUnixPrefix) {
  const SocketAddress address = SocketAddress::unixPath("/run/app.sock");
  EXPECT_EQ(address.family(), AF_UNIX);
  EXPECT_TRUE(address.isUnix());
  EXPECT_FALSE(address.isAbstract());
  EXPECT_FALSE(address.isWildcard());
  EXPECT_EQ(address.path(), "/run/app.sock");
  EXPECT_EQ(address.toString(), "unix:/run/app.sock");
  EXPECT_EQ(address.toIpPort(), "unix:/run/app.sock");
  EXPECT_EQ(address.toIp(), "");
  EXPECT_EQ(address.port(), 0);
  EXPECT_FALSE(address.inet());
  EXPECT_EQ(address.sockLen(), offsetof(sockaddr_un, sun_path) + 14);
}

TEST(SocketAddressTest, AnAbstractNameIsExactlyItsBytes) {
  const SocketAddress address = SocketAddress::unixAbstract("app");
  EXPECT_TRUE(address.isAbstract());
  EXPECT_EQ(address.path(), "app");
  EXPECT_EQ(address.toString(), "unix:@app");
  // No padding: the kernel tells "app" from "app\0\0..." by the length.
  EXPECT_EQ(address.sockLen(), offsetof(sockaddr_un, sun_path) + 1 + 3);
  EXPECT_EQ(address.sockAddr()->sa_family, AF_UNIX);
  EXPECT_NE(address, SocketAddress::unixPath("app"));
  EXPECT_EQ(address, SocketAddress::unixAddress("@app"));
  EXPECT_EQ(SocketAddress::unixAddress("/x"), SocketAddress::unixPath("/x"));
}

TEST(SocketAddressTest, ATooLongPathThrowsNamingTheLimit) {
  const std::string longest(SocketAddress::kMaxUnixNameLength, 'a');
  EXPECT_EQ(SocketAddress::unixPath(longest).path(), longest);
  EXPECT_EQ(SocketAddress::unixAbstract(longest).path(), longest);
  try {
    (void)SocketAddress::unixPath(longest + "a");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the limit is 107"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)SocketAddress::unixAbstract(longest + "a"), std::invalid_argument);
  EXPECT_THROW((void)SocketAddress::unixPath(""), std::invalid_argument);
  EXPECT_THROW((void)SocketAddress::unixAbstract(""), std::invalid_argument);
  EXPECT_THROW((void)SocketAddress::unixPath(std::string("a\0b", 3)), std::invalid_argument);
}

TEST(SocketAddressTest, ParsesUnixAndNumericText) {
  EXPECT_EQ(SocketAddress::parse("unix:/tmp/x.sock"), SocketAddress::unixPath("/tmp/x.sock"));
  EXPECT_EQ(SocketAddress::parse("unix:@name"), SocketAddress::unixAbstract("name"));
  EXPECT_EQ(SocketAddress::parse("10.0.0.1:53"), SocketAddress(InetAddress("10.0.0.1", 53)));
  EXPECT_EQ(SocketAddress::parse("[::1]:80"), SocketAddress(InetAddress("::1", 80)));
  EXPECT_FALSE(SocketAddress::parse("unix:"));
  EXPECT_FALSE(SocketAddress::parse("unix:@"));
  EXPECT_FALSE(SocketAddress::parse("unix:/" + std::string(200, 'a')));
  EXPECT_FALSE(SocketAddress::parse("::1:80"));
  EXPECT_FALSE(SocketAddress::parse("localhost:80"));  // no name lookup here
  EXPECT_FALSE(SocketAddress::parse("1.2.3.4"));
}

TEST(SocketAddressTest, KernelFilledAddressesRoundTrip) {
  sockaddr_storage storage{};
  const SocketAddress path = SocketAddress::unixPath("/a/b");
  std::memcpy(&storage, path.sockAddr(), path.sockLen());
  EXPECT_EQ(SocketAddress::fromSockAddr(storage, path.sockLen()), path);
  // A path the kernel reports without its NUL is the same path.
  EXPECT_EQ(SocketAddress::fromSockAddr(storage, path.sockLen() - 1).path(), "/a/b");
  const SocketAddress abstract = SocketAddress::unixAbstract("n");
  std::memcpy(&storage, abstract.sockAddr(), abstract.sockLen());
  EXPECT_EQ(SocketAddress::fromSockAddr(storage, abstract.sockLen()).toString(), "unix:@n");
  // An unnamed socket (a client's end) has just the family.
  const SocketAddress unnamed = SocketAddress::fromSockAddr(storage, sizeof(sa_family_t));
  EXPECT_TRUE(unnamed.isUnix());
  EXPECT_EQ(unnamed.toString(), "unix:");
  EXPECT_EQ(unnamed.path(), "");
}

}  // namespace
}  // namespace libnet
