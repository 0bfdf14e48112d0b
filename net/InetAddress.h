// InetAddress: an IPv4 or IPv6 socket address (sockaddr_in / sockaddr_in6).
// A plain value; any thread.
//
// Parsing never guesses: InetAddress("300.1.1.1", 80) throws
// std::invalid_argument naming the bad text; parse() returns nullopt instead.
// Hostnames are only looked up by resolve(), which may block.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace libnet {

class InetAddress {
 public:
  // The wildcard (or loopback) address of the family, on `port` (0: any).
  explicit InetAddress(uint16_t port = 0, bool loopbackOnly = false, bool ipv6 = false);
  // A numeric IPv4 ("127.0.0.1") or IPv6 ("::1", "[::1]") address.
  // Throws std::invalid_argument for anything else.
  InetAddress(std::string_view ip, uint16_t port);
  explicit InetAddress(const sockaddr_in& addr) : addr_(addr) {}
  explicit InetAddress(const sockaddr_in6& addr) : addr6_(addr) {}

  [[nodiscard]] static std::optional<InetAddress> parse(std::string_view ip, uint16_t port);
  // "host:port", "1.2.3.4:80", "[::1]:80"; nullopt if malformed.
  [[nodiscard]] static std::optional<InetAddress> parseHostPort(std::string_view text);
  // The host ("name", "1.2.3.4", "[::1]": brackets kept) and the port of
  // "host:port", without looking anything up; nullopt if malformed.
  [[nodiscard]] static std::optional<std::pair<std::string_view, uint16_t>> splitHostPort(
      std::string_view text);
  // The other way: "name:80", "[::1]:80" (brackets added where needed).
  [[nodiscard]] static std::string joinHostPort(std::string_view host, uint16_t port);
  // Looks up a host name (or numeric address) with getaddrinfo. Blocking.
  [[nodiscard]] static std::optional<InetAddress> resolve(std::string_view host, uint16_t port);
  // A port number from text, nullopt unless it is 0..65535.
  [[nodiscard]] static std::optional<uint16_t> parsePort(std::string_view text);

  [[nodiscard]] sa_family_t family() const { return addr_.sin_family; }
  // 0.0.0.0 or ::, the "any address" of the family.
  [[nodiscard]] bool isWildcard() const;
  [[nodiscard]] std::string toIp() const;
  // "127.0.0.1:80" or "[::1]:80"
  [[nodiscard]] std::string toIpPort() const;
  [[nodiscard]] uint16_t port() const { return ntohs(addr_.sin_port); }

  [[nodiscard]] const sockaddr* sockAddr() const {
    return reinterpret_cast<const sockaddr*>(&addr6_);
  }
  [[deprecated("use sockAddr()")]] [[nodiscard]] const sockaddr* getSockAddr() const {
    return sockAddr();
  }
  [[nodiscard]] socklen_t sockLen() const {
    return family() == AF_INET6 ? sizeof addr6_ : sizeof addr_;
  }
  // Sets from a kernel-filled sockaddr (accept, getsockname).
  void setSockAddr(const sockaddr_storage& storage);

  friend bool operator==(const InetAddress& a, const InetAddress& b);

 private:
  // sin_family and sin_port sit at the same offsets in both structs.
  union {
    sockaddr_in addr_;
    sockaddr_in6 addr6_;
  };
};

}  // namespace libnet
