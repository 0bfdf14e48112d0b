// Socket: owns one socket fd (through UniqueFd) and wraps the calls made on
// it. Setup calls that leave nothing usable (socket, bind, listen) throw
// std::system_error whose message names the call and the address, e.g.
// "bind 127.0.0.1:80: Permission denied". Used on the owner's thread.
#pragma once

#include <optional>

#include "base/UniqueFd.h"
#include "net/InetAddress.h"

namespace libnet {

class Socket {
 public:
  explicit Socket(UniqueFd fd) : fd_(std::move(fd)) {}
  Socket(Socket&&) noexcept = default;
  Socket& operator=(Socket&&) noexcept = default;

  // A non-blocking, close-on-exec TCP socket of `family`.
  [[nodiscard]] static Socket createNonblocking(sa_family_t family);

  [[nodiscard]] int fd() const { return fd_.get(); }
  // Hands the fd to the caller; the Socket is left empty.
  [[nodiscard]] UniqueFd releaseFd() { return std::move(fd_); }
  void close() { fd_.reset(); }

  void bindAddress(const InetAddress& local);
  void listen(int backlog = SOMAXCONN);
  // A non-blocking, close-on-exec connected socket, or an invalid UniqueFd
  // with errno left set.
  [[nodiscard]] UniqueFd accept(InetAddress* peer);

  void shutdownWrite();
  void setTcpNoDelay(bool on);
  void setReuseAddr(bool on);
  void setReusePort(bool on);  // throws if the kernel refuses
  void setKeepAlive(bool on);

  // Helpers on a raw fd.
  [[nodiscard]] static int getSocketError(int fd);
  [[nodiscard]] static InetAddress localAddress(int fd);
  [[nodiscard]] static InetAddress peerAddress(int fd);
  // The peer's (getpeername) or the local (getsockname) address, or nullopt
  // with errno set (ENOTCONN: the peer reset the connection before anyone
  // asked for its address). Logs nothing.
  [[nodiscard]] static std::optional<InetAddress> tryAddress(int fd, bool peer);
  // Errors a peer or the network causes on an established connection
  // (reset, broken pipe, no longer connected, timed out, unreachable):
  // everyday events for a server, not faults of this process.
  [[nodiscard]] static bool isPeerError(int err);
  // A client that connects to a port in its own ephemeral range can end up
  // connected to itself; this detects it.
  [[nodiscard]] static bool isSelfConnect(int fd);

 private:
  UniqueFd fd_;
};

}  // namespace libnet
