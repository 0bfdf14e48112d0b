#include "net/InetAddress.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <charconv>
#include <cstring>
#include <stdexcept>

namespace libnet {

static_assert(offsetof(sockaddr_in, sin_family) == offsetof(sockaddr_in6, sin6_family));
static_assert(offsetof(sockaddr_in, sin_port) == offsetof(sockaddr_in6, sin6_port));

InetAddress::InetAddress(uint16_t port, bool loopbackOnly, bool ipv6) {
  std::memset(&addr6_, 0, sizeof addr6_);
  if (ipv6) {
    addr6_.sin6_family = AF_INET6;
    addr6_.sin6_addr = loopbackOnly ? in6addr_loopback : in6addr_any;
    addr6_.sin6_port = htons(port);
  } else {
    addr_.sin_family = AF_INET;
    addr_.sin_addr.s_addr = htonl(loopbackOnly ? INADDR_LOOPBACK : INADDR_ANY);
    addr_.sin_port = htons(port);
  }
}

InetAddress::InetAddress(std::string_view ip, uint16_t port) {
  auto parsed = parse(ip, port);
  if (!parsed) {
    throw std::invalid_argument("invalid IP address '" + std::string(ip) +
                                "' (expected a numeric IPv4 or IPv6 address)");
  }
  *this = *parsed;
}

std::optional<InetAddress> InetAddress::parse(std::string_view ip, uint16_t port) {
  // Brackets are IPv6 URL syntax ("[::1]"); "[127.0.0.1]" is refused below.
  bool bracketed = false;
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') {
    ip = ip.substr(1, ip.size() - 2);
    bracketed = true;
  }
  if (ip.empty() || ip.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  char text[INET6_ADDRSTRLEN];
  std::memcpy(text, ip.data(), ip.size());
  text[ip.size()] = '\0';
  if (std::memchr(text, '\0', ip.size())) return std::nullopt;
  InetAddress address;
  std::memset(&address.addr6_, 0, sizeof address.addr6_);
  if (!bracketed && ::inet_pton(AF_INET, text, &address.addr_.sin_addr) == 1) {
    address.addr_.sin_family = AF_INET;
    address.addr_.sin_port = htons(port);
    return address;
  }
  if (::inet_pton(AF_INET6, text, &address.addr6_.sin6_addr) == 1) {
    address.addr6_.sin6_family = AF_INET6;
    address.addr6_.sin6_port = htons(port);
    return address;
  }
  return std::nullopt;
}

std::optional<uint16_t> InetAddress::parsePort(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(value);
}

std::optional<std::pair<std::string_view, uint16_t>> InetAddress::splitHostPort(
    std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  auto port = parsePort(text.substr(colon + 1));
  if (!port) return std::nullopt;
  // An unbracketed IPv6 address has more colons: refuse it as ambiguous.
  if (host.find(':') != std::string_view::npos && host.front() != '[') return std::nullopt;
  return std::pair(host, *port);
}

std::string InetAddress::joinHostPort(std::string_view host, uint16_t port) {
  const bool bracket = host.find(':') != std::string_view::npos && host.front() != '[';
  return (bracket ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

std::optional<InetAddress> InetAddress::parseHostPort(std::string_view text) {
  const auto hostPort = splitHostPort(text);
  if (!hostPort) return std::nullopt;
  if (auto numeric = parse(hostPort->first, hostPort->second)) return numeric;
  return resolve(hostPort->first, hostPort->second);
}

std::optional<InetAddress> InetAddress::resolve(std::string_view host, uint16_t port) {
  if (auto numeric = parse(host, port)) return numeric;
  const std::string name(host);
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* result = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &result) != 0 || result == nullptr) {
    return std::nullopt;
  }
  std::optional<InetAddress> address;
  for (auto* ai = result; ai != nullptr && !address; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      sockaddr_in sin;
      std::memcpy(&sin, ai->ai_addr, sizeof sin);
      sin.sin_port = htons(port);
      address = InetAddress(sin);
    } else if (ai->ai_family == AF_INET6) {
      sockaddr_in6 sin6;
      std::memcpy(&sin6, ai->ai_addr, sizeof sin6);
      sin6.sin6_port = htons(port);
      address = InetAddress(sin6);
    }
  }
  ::freeaddrinfo(result);
  return address;
}

std::string InetAddress::toIp() const {
  char buf[INET6_ADDRSTRLEN] = "";
  if (family() == AF_INET6) {
    ::inet_ntop(AF_INET6, &addr6_.sin6_addr, buf, sizeof buf);
  } else {
    ::inet_ntop(AF_INET, &addr_.sin_addr, buf, sizeof buf);
  }
  return buf;
}

std::string InetAddress::toIpPort() const {
  const std::string port = std::to_string(this->port());
  if (family() == AF_INET6) return "[" + toIp() + "]:" + port;
  return toIp() + ":" + port;
}

void InetAddress::setSockAddr(const sockaddr_storage& storage) {
  if (storage.ss_family == AF_INET6) {
    std::memcpy(&addr6_, &storage, sizeof addr6_);
  } else {
    std::memset(&addr6_, 0, sizeof addr6_);
    std::memcpy(&addr_, &storage, sizeof addr_);
  }
}

bool operator==(const InetAddress& a, const InetAddress& b) {
  if (a.family() != b.family() || a.port() != b.port()) return false;
  if (a.family() == AF_INET6) {
    return std::memcmp(&a.addr6_.sin6_addr, &b.addr6_.sin6_addr, sizeof(in6_addr)) == 0;
  }
  return a.addr_.sin_addr.s_addr == b.addr_.sin_addr.s_addr;
}

bool InetAddress::isWildcard() const {
  if (family() == AF_INET6) return IN6_IS_ADDR_UNSPECIFIED(&addr6_.sin6_addr);
  return addr_.sin_addr.s_addr == htonl(INADDR_ANY);
}

}  // namespace libnet
