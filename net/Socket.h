// Socket: owns one socket fd (through UniqueFd) and wraps the calls made on
// it: a stream socket of any family (TCP over IPv4 or IPv6, or Unix). Setup
// calls that leave nothing usable (socket, bind, listen) throw
// std::system_error whose message names the call and the address, e.g.
// "bind 127.0.0.1:80: Permission denied". Used on the owner's thread.
#pragma once

#include <optional>

#include "base/UniqueFd.h"
#include "net/SocketAddress.h"

namespace libnet {

class Socket {
 public:
  explicit Socket(UniqueFd fd) : fd_(std::move(fd)) {}
  Socket(Socket&&) noexcept = default;
  Socket& operator=(Socket&&) noexcept = default;

  // A non-blocking, close-on-exec stream socket of `family` (AF_INET,
  // AF_INET6: TCP; AF_UNIX).
  [[nodiscard]] static Socket createNonblocking(sa_family_t family);

  [[nodiscard]] int fd() const { return fd_.get(); }
  // Hands the fd to the caller; the Socket is left empty.
  [[nodiscard]] UniqueFd releaseFd() { return std::move(fd_); }
  void close() { fd_.reset(); }

  void bindAddress(const SocketAddress& local);
  void listen(int backlog = SOMAXCONN);
  // A non-blocking, close-on-exec connected socket, or an invalid UniqueFd
  // with errno left set.
  [[nodiscard]] UniqueFd accept(SocketAddress* peer);

  void shutdownWrite();
  // A TCP option: on a Unix socket, which has no Nagle delay to turn off,
  // it does nothing (no error, no log line).
  void setTcpNoDelay(bool on);
  void setReuseAddr(bool on);
  void setReusePort(bool on);  // throws if the kernel refuses
  void setKeepAlive(bool on);

  // Helpers on a raw fd.
  [[nodiscard]] static int getSocketError(int fd);
  [[nodiscard]] static SocketAddress localAddress(int fd);
  [[nodiscard]] static SocketAddress peerAddress(int fd);
  // The peer's (getpeername) or the local (getsockname) address, or nullopt
  // with errno set (ENOTCONN: the peer reset the connection before anyone
  // asked for its address). Logs nothing.
  [[nodiscard]] static std::optional<SocketAddress> tryAddress(int fd, bool peer);
  // The credentials (pid, uid, gid) of the process that connected a Unix
  // socket, as they were when it called connect() (SO_PEERCRED); nullopt
  // with errno set if the lookup fails. Meaningless on TCP: ask only of
  // Unix sockets.
  [[nodiscard]] static std::optional<ucred> peerCredentials(int fd);
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
