#include "net/ProxyProtocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "net/InetAddress.h"

namespace libnet {

namespace {

using Result = ProxyProtocol::Result;
using Status = ProxyProtocol::Status;

constexpr std::string_view kV1Prefix = "PROXY ";
constexpr std::string_view kV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};

Result incomplete() { return Result{}; }

Result malformed(std::string_view reason) {
  return Result{.status = Status::kMalformed, .reason = reason};
}

// Whether the first bytes of `bytes` (as many as there are) match `prefix`.
bool startsLikeOrIs(std::string_view bytes, std::string_view prefix) {
  const size_t n = std::min(bytes.size(), prefix.size());
  return bytes.substr(0, n) == prefix.substr(0, n);
}

// Splits off the text up to the next single space; empty when the text
// starts with a space (two spaces in a row) or is empty.
std::string_view nextField(std::string_view& rest) {
  const size_t space = rest.find(' ');
  std::string_view field = rest.substr(0, space);
  rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  return field;
}

// A v1 port: decimal, 0..65535, no sign and no leading zero.
std::optional<uint16_t> parseV1Port(std::string_view text) {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint32_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  if (value > 65535) return std::nullopt;
  return static_cast<uint16_t>(value);
}

// A numeric address of exactly `family` (no brackets, no zone) and a port.
std::optional<SocketAddress> parseV1Address(int family, std::string_view ip, uint16_t port) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (ip.empty() || ip.size() >= text.size()) return std::nullopt;
  std::memcpy(text.data(), ip.data(), ip.size());
  if (family == AF_INET) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_port = htons(port);
    if (inet_pton(AF_INET, text.data(), &sin.sin_addr) != 1) return std::nullopt;
    return SocketAddress(InetAddress(sin));
  }
  sockaddr_in6 sin6{};
  sin6.sin6_family = AF_INET6;
  sin6.sin6_port = htons(port);
  if (inet_pton(AF_INET6, text.data(), &sin6.sin6_addr) != 1) return std::nullopt;
  return SocketAddress(InetAddress(sin6));
}

// The fields of a v1 line between "PROXY " and CRLF.
Result parseV1Fields(std::string_view line, size_t length) {
  std::string_view rest = line;
  const std::string_view protocol = nextField(rest);
  Result done{.status = Status::kDone, .length = length, .version = 1};
  // UNKNOWN: whatever follows is to be ignored, and the socket's addresses kept.
  if (protocol == "UNKNOWN") return done;
  int family = 0;
  if (protocol == "TCP4") {
    family = AF_INET;
  } else if (protocol == "TCP6") {
    family = AF_INET6;
  } else {
    return malformed("v1: protocol is not TCP4, TCP6 or UNKNOWN");
  }
  const std::string_view srcIp = nextField(rest);
  const std::string_view dstIp = nextField(rest);
  const std::string_view srcPortText = nextField(rest);
  const std::string_view dstPortText = rest;
  if (dstPortText.find(' ') != std::string_view::npos) return malformed("v1: too many fields");
  const std::optional<uint16_t> srcPort = parseV1Port(srcPortText);
  const std::optional<uint16_t> dstPort = parseV1Port(dstPortText);
  if (!srcPort || !dstPort) return malformed("v1: bad port");
  done.source = parseV1Address(family, srcIp, *srcPort);
  done.destination = parseV1Address(family, dstIp, *dstPort);
  if (!done.source || !done.destination) return malformed("v1: bad address for the protocol");
  return done;
}

uint16_t readBigEndian16(const unsigned char* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

// The addresses of a v2 PROXY header over TCP: nullopt source for a family
// that gives none we use (UNSPEC, Unix); malformed when the block is short.
Result parseV2Addresses(unsigned char family, const unsigned char* block, size_t blockLength,
                        Result done) {
  const unsigned char addressFamily = family >> 4;
  if (addressFamily == 1) {
    if (blockLength < 12) return malformed("v2: address block too short for IPv4");
    sockaddr_in src{};
    sockaddr_in dst{};
    src.sin_family = dst.sin_family = AF_INET;
    std::memcpy(&src.sin_addr, block, 4);
    std::memcpy(&dst.sin_addr, block + 4, 4);
    std::memcpy(&src.sin_port, block + 8, 2);
    std::memcpy(&dst.sin_port, block + 10, 2);
    done.source = SocketAddress(InetAddress(src));
    done.destination = SocketAddress(InetAddress(dst));
  } else if (addressFamily == 2) {
    if (blockLength < 36) return malformed("v2: address block too short for IPv6");
    sockaddr_in6 src{};
    sockaddr_in6 dst{};
    src.sin6_family = dst.sin6_family = AF_INET6;
    std::memcpy(&src.sin6_addr, block, 16);
    std::memcpy(&dst.sin6_addr, block + 16, 16);
    std::memcpy(&src.sin6_port, block + 32, 2);
    std::memcpy(&dst.sin6_port, block + 34, 2);
    done.source = SocketAddress(InetAddress(src));
    done.destination = SocketAddress(InetAddress(dst));
  } else if (addressFamily == 3 && blockLength < 216) {
    return malformed("v2: address block too short for AF_UNIX");
  }
  return done;
}

// The 16 address bytes of an IPv6 address, or of an IPv4 one in its
// IPv4-mapped form (::ffff:a.b.c.d), so that both compare alike.
std::array<unsigned char, 16> mappedBytes(const InetAddress& address) {
  std::array<unsigned char, 16> bytes{};
  const sockaddr* sa = address.sockAddr();
  if (address.family() == AF_INET6) {
    std::memcpy(bytes.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
  } else {
    bytes[10] = bytes[11] = 0xff;
    std::memcpy(bytes.data() + 12, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
  }
  return bytes;
}

}  // namespace

std::optional<ProxyProtocol::TrustedSource> ProxyProtocol::TrustedSource::parse(
    std::string_view text) {
  const size_t slash = text.find('/');
  std::optional<InetAddress> address = InetAddress::parse(text.substr(0, slash), 0);
  if (!address) return std::nullopt;
  const int maxBits = address->family() == AF_INET6 ? 128 : 32;
  int bits = maxBits;
  if (slash != std::string_view::npos) {
    const std::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) return std::nullopt;
    bits = 0;
    for (const char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      bits = bits * 10 + (c - '0');
    }
    if (bits > maxBits) return std::nullopt;
  }
  // Kept as IPv6 bits throughout: an IPv4 prefix is a mapped one.
  if (address->family() == AF_INET) bits += 96;
  return TrustedSource(*address, bits);
}

bool ProxyProtocol::TrustedSource::contains(const SocketAddress& peer) const {
  const std::optional<InetAddress> inet = peer.inet();
  if (!inet) return false;
  const std::array<unsigned char, 16> a = mappedBytes(address_);
  const std::array<unsigned char, 16> b = mappedBytes(*inet);
  const int whole = bits_ / 8;
  if (std::memcmp(a.data(), b.data(), static_cast<size_t>(whole)) != 0) return false;
  const int rest = bits_ % 8;
  if (rest == 0) return true;
  const auto mask = static_cast<unsigned char>(0xff << (8 - rest));
  return (a[static_cast<size_t>(whole)] & mask) == (b[static_cast<size_t>(whole)] & mask);
}

std::string ProxyProtocol::TrustedSource::toString() const {
  const int bits = address_.family() == AF_INET ? bits_ - 96 : bits_;
  return address_.toIp() + "/" + std::to_string(bits);
}

ProxyProtocol::Result ProxyProtocol::parse(std::string_view bytes) {
  if (bytes.empty()) return incomplete();
  if (bytes[0] == 'P') return parseV1(bytes);
  if (bytes[0] == '\r') return parseV2(bytes);
  return malformed("no PROXY protocol header");
}

ProxyProtocol::Result ProxyProtocol::parseV1(std::string_view bytes) {
  if (!startsLikeOrIs(bytes, kV1Prefix)) return malformed("no PROXY protocol header");
  // The CR may sit at most at index 105: LF at 106 makes 107 bytes.
  const size_t limit = std::min(bytes.size(), kMaxV1Length - 1);
  for (size_t i = kV1Prefix.size(); i < limit; ++i) {
    const char c = bytes[i];
    if (c == '\r') {
      if (i + 1 == bytes.size()) return incomplete();
      if (bytes[i + 1] != '\n') return malformed("v1: CR not followed by LF");
      return parseV1Fields(bytes.substr(kV1Prefix.size(), i - kV1Prefix.size()), i + 2);
    }
    // Only printable ASCII: a stray LF, NUL or control byte ends it early.
    if (c < 0x20 || c > 0x7e) return malformed("v1: byte that is not printable ASCII");
  }
  if (bytes.size() >= kMaxV1Length - 1) return malformed("v1: no CRLF within 107 bytes");
  return incomplete();
}

ProxyProtocol::Result ProxyProtocol::parseV2(std::string_view bytes) {
  if (!startsLikeOrIs(bytes, kV2Signature)) return malformed("no PROXY protocol header");
  if (bytes.size() < kV2FixedLength) return incomplete();
  const auto* header = reinterpret_cast<const unsigned char*>(bytes.data());
  const unsigned char versionCommand = header[12];
  const unsigned char family = header[13];
  const size_t payloadLength = readBigEndian16(header + 14);
  if ((versionCommand >> 4) != 2) return malformed("v2: version is not 2");
  const unsigned char command = versionCommand & 0x0f;
  if (command > 1) return malformed("v2: command is neither LOCAL nor PROXY");
  if (payloadLength > kMaxV2PayloadLength) return malformed("v2: header longer than 4096 bytes");
  // Checked before the payload is in: the family decides nothing for LOCAL
  // but must still be one the spec defines.
  if ((family >> 4) > 3 || (family & 0x0f) > 2) return malformed("v2: unknown address family");
  if (bytes.size() < kV2FixedLength + payloadLength) return incomplete();
  Result done{.status = Status::kDone, .length = kV2FixedLength + payloadLength, .version = 2};
  // LOCAL: the proxy's own connection (a health check); datagram transports
  // do not describe this stream: the socket's addresses stand for both.
  if (command == 0 || (family & 0x0f) != 1) return done;
  return parseV2Addresses(family, header + kV2FixedLength, payloadLength, done);
}

}  // namespace libnet
