#include "net/ProxyProtocol.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace libnet {
namespace {

using Status = ProxyProtocol::Status;

constexpr std::string_view kSig{"\r\n\r\n\0\r\nQUIT\n", 12};

// A v2 header: signature, ver/cmd, family, length, then `payload`.
std::string v2(unsigned char verCmd, unsigned char family, const std::string& payload,
               int lengthOverride = -1) {
  std::string h(kSig);
  h += static_cast<char>(verCmd);
  h += static_cast<char>(family);
  const size_t len = lengthOverride >= 0 ? static_cast<size_t>(lengthOverride) : payload.size();
  h += static_cast<char>((len >> 8) & 0xff);
  h += static_cast<char>(len & 0xff);
  return h + payload;
}

std::string ipv4Block(const std::string& tlvs = "") {
  // 192.0.2.1:56324 -> 198.51.100.7:443
  const unsigned char b[] = {192, 0, 2, 1, 198, 51, 100, 7, 0xdc, 0x04, 0x01, 0xbb};
  return std::string(reinterpret_cast<const char*>(b), sizeof b) + tlvs;
}

std::string ipv6Block() {
  std::string b(36, '\0');
  b[0] = 0x20;
  b[1] = 0x01;
  b[2] = 0x0d;
  b[3] = static_cast<char>(0xb8);
  b[15] = 1;  // 2001:db8::1
  b[31] = 2;  // ::2
  b[32] = 0x30;
  b[33] = 0x39;  // 12345
  b[34] = 0;
  b[35] = 80;
  return b;
}

TEST(ProxyProtocolTest, V1Tcp4) {
  const std::string line = "PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n";
  const auto r = ProxyProtocol::parse(line + "GET / HTTP/1.1\r\n");
  ASSERT_EQ(r.status, Status::kDone) << r.reason;
  EXPECT_EQ(r.version, 1);
  EXPECT_EQ(r.length, line.size());
  ASSERT_TRUE(r.source && r.destination);
  EXPECT_EQ(r.source->toIpPort(), "192.0.2.1:56324");
  EXPECT_EQ(r.destination->toIpPort(), "198.51.100.7:443");
}

TEST(ProxyProtocolTest, V1Tcp6) {
  const std::string line = "PROXY TCP6 2001:db8::1 ::ffff:10.0.0.1 0 65535\r\n";
  const auto r = ProxyProtocol::parse(line);
  ASSERT_EQ(r.status, Status::kDone) << r.reason;
  EXPECT_EQ(r.length, line.size());
  EXPECT_EQ(r.source->toIpPort(), "[2001:db8::1]:0");
  EXPECT_EQ(r.destination->port(), 65535);
  EXPECT_EQ(r.destination->family(), AF_INET6);
}

TEST(ProxyProtocolTest, V1Unknown) {
  for (const std::string line : {"PROXY UNKNOWN\r\n", "PROXY UNKNOWN whatever 1 2 3\r\n"}) {
    const auto r = ProxyProtocol::parse(line + "x");
    ASSERT_EQ(r.status, Status::kDone) << line;
    EXPECT_EQ(r.length, line.size());
    EXPECT_FALSE(r.source);
    EXPECT_FALSE(r.destination);
  }
}

TEST(ProxyProtocolTest, V1LongestLineIsAccepted) {
  std::string line =
      "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
      "65535 65535\r\n";
  ASSERT_EQ(line.size(), 104u);
  EXPECT_EQ(ProxyProtocol::parse(line).status, Status::kDone);
  // UNKNOWN may fill the line up to the limit, and not one byte more.
  std::string unknown = "PROXY UNKNOWN " + std::string(107 - 16, 'a') + "\r\n";
  ASSERT_EQ(unknown.size(), 107u);
  EXPECT_EQ(ProxyProtocol::parse(unknown).status, Status::kDone);
  std::string tooLong = "PROXY UNKNOWN " + std::string(107 - 15, 'a') + "\r\n";
  EXPECT_EQ(ProxyProtocol::parse(tooLong).status, Status::kMalformed);
}

TEST(ProxyProtocolTest, EveryPrefixOfAHeaderIsIncomplete) {
  const std::vector<std::string> headers = {
      "PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n",
      v2(0x21, 0x11, ipv4Block()),
      v2(0x21, 0x21, ipv6Block()),
      v2(0x20, 0x00, ""),
  };
  for (const std::string& h : headers) {
    for (size_t n = 0; n < h.size(); ++n) {
      EXPECT_EQ(ProxyProtocol::parse(std::string_view(h).substr(0, n)).status, Status::kIncomplete)
          << n;
    }
    EXPECT_EQ(ProxyProtocol::parse(h).status, Status::kDone);
  }
}

TEST(ProxyProtocolTest, V1Malformed) {
  const char* bad[] = {
      "GET / HTTP/1.1\r\n",
      "PROXY\r\n",
      "PROXY \r\n",
      "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n",
      "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",
      "PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n",
      "PROXY UNKNOWNX\r\n",
      "PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n",
      "PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 99999\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 0x2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 100000 2\r\n",
      "PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n",
      "PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n",
      "PROXY TCP4 ::1 5.6.7.8 1 2\r\n",
      "PROXY TCP6 1.2.3.4 ::1 1 2\r\n",
      "PROXY TCP6 [::1] ::1 1 2\r\n",
      "PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n",
      "PROXY TCP4 example.com 5.6.7.8 1 2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX",
      "PROXY TCP4 1.2.3.4\t5.6.7.8 1 2\r\n",
      "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\x80\r\n",
  };
  for (const char* line : bad) {
    const auto r = ProxyProtocol::parse(line);
    EXPECT_EQ(r.status, Status::kMalformed) << line;
    EXPECT_FALSE(r.reason.empty()) << line;
  }
  // A NUL inside the line.
  EXPECT_EQ(ProxyProtocol::parse(std::string("PROXY TCP4 1.2.3.4\0", 19)).status,
            Status::kMalformed);
  // No CRLF within 107 bytes, even before the rest arrives.
  EXPECT_EQ(ProxyProtocol::parse("PROXY UNKNOWN " + std::string(200, 'a')).status,
            Status::kMalformed);
}

TEST(ProxyProtocolTest, V2Ipv4WithTlvsSkipped) {
  const std::string tlvs = std::string("\x01\x00\x02h2", 5) + std::string("\x04\x00\x00", 3);
  const std::string h = v2(0x21, 0x11, ipv4Block(tlvs));
  const auto r = ProxyProtocol::parse(h + "payload");
  ASSERT_EQ(r.status, Status::kDone) << r.reason;
  EXPECT_EQ(r.version, 2);
  EXPECT_EQ(r.length, h.size());
  EXPECT_EQ(r.source->toIpPort(), "192.0.2.1:56324");
  EXPECT_EQ(r.destination->toIpPort(), "198.51.100.7:443");
}

TEST(ProxyProtocolTest, V2Ipv6) {
  const std::string h = v2(0x21, 0x21, ipv6Block());
  const auto r = ProxyProtocol::parse(h);
  ASSERT_EQ(r.status, Status::kDone) << r.reason;
  EXPECT_EQ(r.length, 16u + 36u);
  EXPECT_EQ(r.source->toIpPort(), "[2001:db8::1]:12345");
  EXPECT_EQ(r.destination->toIpPort(), "[::2]:80");
}

TEST(ProxyProtocolTest, V2KeepsSocketAddresses) {
  // LOCAL (whatever its family and block), UNSPEC, Unix, datagrams.
  const std::vector<std::string> headers = {
      v2(0x20, 0x00, ""),          v2(0x20, 0x11, ipv4Block()),
      v2(0x20, 0x11, ""),          v2(0x21, 0x00, ""),
      v2(0x21, 0x00, "anything"),  v2(0x21, 0x31, std::string(216, '\0')),
      v2(0x21, 0x12, ipv4Block()),
  };
  for (const std::string& h : headers) {
    const auto r = ProxyProtocol::parse(h);
    ASSERT_EQ(r.status, Status::kDone) << r.reason;
    EXPECT_EQ(r.length, h.size());
    EXPECT_FALSE(r.source);
    EXPECT_FALSE(r.destination);
  }
}

TEST(ProxyProtocolTest, V2Malformed) {
  const std::vector<std::string> bad = {
      v2(0x11, 0x11, ipv4Block()),                                 // version 1 in binary
      v2(0x31, 0x11, ipv4Block()),                                 // version 3
      v2(0x22, 0x11, ipv4Block()),                                 // command 2
      v2(0x21, 0x41, ipv4Block()),                                 // family 4
      v2(0x21, 0x13, ipv4Block()),                                 // transport 3
      v2(0x21, 0x11, ipv4Block().substr(0, 11)),                   // short IPv4 block
      v2(0x21, 0x21, ipv6Block().substr(0, 35)),                   // short IPv6 block
      v2(0x21, 0x31, std::string(215, '\0')),                      // short Unix block
      v2(0x21, 0x11, "", ProxyProtocol::kMaxV2PayloadLength + 1),  // too long, refused early
      std::string("\r\n\r\n\0\r\nQUIX\n", 12) + "\x21\x11\x00\x0c",
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    const auto r = ProxyProtocol::parse(bad[i]);
    EXPECT_EQ(r.status, Status::kMalformed) << i;
    EXPECT_FALSE(r.reason.empty()) << i;
  }
  // The longest accepted payload.
  const std::string longest = v2(0x21, 0x11, ipv4Block(std::string(4096 - 12, '\0')));
  EXPECT_EQ(ProxyProtocol::parse(longest).status, Status::kDone);
  EXPECT_EQ(ProxyProtocol::parse(longest).length, ProxyProtocol::kMaxHeaderLength);
}

// Random bytes, random mutations of valid headers, random truncations: the
// parser must never read past what it is given (each input sits in a heap
// block of exactly its size, so ASan would catch it), and what it says must
// be consistent: kDone only with a length within the input.
TEST(ProxyProtocolTest, RandomInputsStayInBounds) {
  std::mt19937 rng(35);
  const std::vector<std::string> seeds = {
      "PROXY TCP4 192.0.2.1 198.51.100.7 56324 443\r\n",
      "PROXY TCP6 2001:db8::1 ::1 1 2\r\n",
      "PROXY UNKNOWN\r\n",
      v2(0x21, 0x11, ipv4Block("\x01\x00\x02h2")),
      v2(0x21, 0x21, ipv6Block()),
      v2(0x20, 0x00, ""),
  };
  size_t done = 0;
  size_t malformedCount = 0;
  for (int iteration = 0; iteration < 200000; ++iteration) {
    std::string input = seeds[rng() % seeds.size()];
    const int mutations = static_cast<int>(rng() % 4);
    for (int m = 0; m < mutations && !input.empty(); ++m) {
      input[rng() % input.size()] = static_cast<char>(rng() & 0xff);
    }
    if (rng() % 2 == 0) input.resize(rng() % (input.size() + 1));
    if (rng() % 8 == 0) input.append(rng() % 64, static_cast<char>(rng() & 0xff));
    const size_t n = input.size();
    auto exact = std::make_unique<char[]>(n == 0 ? 1 : n);
    std::memcpy(exact.get(), input.data(), n);
    const auto r = ProxyProtocol::parse(std::string_view(exact.get(), n));
    if (r.status == Status::kDone) {
      ++done;
      ASSERT_GT(r.length, 0u);
      ASSERT_LE(r.length, n);
      ASSERT_LE(r.length, ProxyProtocol::kMaxHeaderLength);
      ASSERT_EQ(r.source.has_value(), r.destination.has_value());
    } else if (r.status == Status::kMalformed) {
      ++malformedCount;
      ASSERT_FALSE(r.reason.empty());
    }
  }
  // The generator reaches every outcome.
  EXPECT_GT(done, 1000u);
  EXPECT_GT(malformedCount, 1000u);
}

}  // namespace
}  // namespace libnet
