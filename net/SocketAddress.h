// SocketAddress: the address of a stream socket of any family libnet
// serves: IPv4 or IPv6 (an InetAddress) or a Unix domain socket, named by a
// path in the file system ("unix:/run/app.sock") or by a name in Linux's
// abstract namespace ("unix:@app", which leaves no file behind). A plain
// value, with the sockaddr and its exact length; any thread.
//
// Built from an InetAddress implicitly, so that code written for TCP passes
// one where a SocketAddress is taken. The inet accessors (toIpPort(), port(),
// toIp()) answer for Unix addresses too (toString(), 0, ""), so that a log
// line written for TCP needs no change for Unix.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "net/InetAddress.h"

namespace libnet {

class SocketAddress {
 public:
  // The longest path or abstract name a sockaddr_un holds: sun_path less
  // one byte (a path's terminating NUL, an abstract name's leading one).
  static constexpr size_t kMaxUnixNameLength = sizeof(sockaddr_un::sun_path) - 1;

  SocketAddress(const InetAddress& inet);  // NOLINT: implicit on purpose
  SocketAddress() : SocketAddress(InetAddress()) {}

  // A Unix socket at `path`; std::invalid_argument (naming the limit) for an
  // empty path, one with a NUL, or one over kMaxUnixNameLength bytes.
  [[nodiscard]] static SocketAddress unixPath(std::string_view path);
  // A Unix socket in the abstract namespace, the name exactly as given (no
  // padding); std::invalid_argument for an empty or over-long name.
  [[nodiscard]] static SocketAddress unixAbstract(std::string_view name);
  // "@name": unixAbstract(name); anything else: unixPath(text). For the
  // --unix flags of the example programs.
  [[nodiscard]] static SocketAddress unixAddress(std::string_view text);
  // "unix:/path", "unix:@name", or a numeric "ip:port" / "[ip6]:port" (no
  // name lookup); nullopt if malformed or over-long.
  [[nodiscard]] static std::optional<SocketAddress> parse(std::string_view text);
  // From a kernel-filled sockaddr (accept, getsockname, getpeername).
  [[nodiscard]] static SocketAddress fromSockAddr(const sockaddr_storage& storage, socklen_t len);

  [[nodiscard]] sa_family_t family() const { return storage_.un.sun_family; }
  [[nodiscard]] bool isUnix() const { return family() == AF_UNIX; }
  [[nodiscard]] bool isAbstract() const { return isUnix() && len_ > kPathOffset && !un()[0]; }
  // The InetAddress of an IPv4 or IPv6 address; nullopt for a Unix one.
  [[nodiscard]] std::optional<InetAddress> inet() const;
  // A Unix address's path, or its abstract name without the leading NUL;
  // empty for an unnamed socket (a client's end) and for inet addresses.
  [[nodiscard]] std::string path() const;
  // "unix:/path", "unix:@name", "unix:" (unnamed), or "1.2.3.4:80".
  [[nodiscard]] std::string toString() const;
  // Inet: as InetAddress's. Unix: toString(), "" and 0.
  [[nodiscard]] std::string toIpPort() const { return toString(); }
  [[nodiscard]] std::string toIp() const;
  [[nodiscard]] uint16_t port() const;
  // 0.0.0.0 or ::; never a Unix address.
  [[nodiscard]] bool isWildcard() const;

  [[nodiscard]] const sockaddr* sockAddr() const { return &storage_.sa; }
  [[nodiscard]] socklen_t sockLen() const { return len_; }

  friend bool operator==(const SocketAddress& a, const SocketAddress& b);

 private:
  static constexpr socklen_t kPathOffset = offsetof(sockaddr_un, sun_path);
  [[nodiscard]] const char* un() const { return storage_.un.sun_path; }
  // Any family but AF_UNIX read as IPv4 or IPv6 (an AF_UNSPEC one as IPv4,
  // as InetAddress does).
  [[nodiscard]] InetAddress asInet() const;
  static SocketAddress makeUnix(std::string_view name, bool abstract);

  union {
    sockaddr sa;
    sockaddr_in in;
    sockaddr_in6 in6;
    sockaddr_un un;
  } storage_;
  socklen_t len_;
};

}  // namespace libnet
