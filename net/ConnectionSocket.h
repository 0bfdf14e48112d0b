// ConnectionSocket: a connection's socket, its two addresses and, on a Unix
// socket, its peer's credentials. An address not given at construction is
// looked up from the socket the first time it is asked for (one
// getsockname/getpeername, then kept), so that a server accepting on a
// wildcard address, or on io_uring (whose multishot accept reports no peer
// address), makes no such call per connection. The credentials are looked up
// the same way (SO_PEERCRED): the kernel keeps them as they were at
// connect(), so asking later gives what asking at accept would have, for
// one system call only where someone asks. When the I/O
// strategy is done with the fd, releaseFd() hands it over under the same
// lock a lookup takes, so no lookup ever uses a closed (or reused) fd.
//
// Owned by its TcpConnection (TcpConnection::Impl). address() from any
// thread; the rest on the connection's loop thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "base/UniqueFd.h"
#include "net/Socket.h"
#include "net/SocketAddress.h"

namespace libnet {

class ConnectionSocket {
 public:
  enum Which : uint8_t { kLocal = 1, kPeer = 2 };

  // `localFallback` is what the local address is if the lookup can no
  // longer be made (a server's listening address); the peer's is then the
  // empty address (0.0.0.0:0).
  ConnectionSocket(UniqueFd fd, std::optional<SocketAddress> local,
                   std::optional<SocketAddress> peer, const SocketAddress& localFallback);
  ConnectionSocket(const ConnectionSocket&) = delete;
  ConnectionSocket& operator=(const ConnectionSocket&) = delete;

  [[nodiscard]] int fd() const { return socket_.fd(); }
  [[nodiscard]] Socket& socket() { return socket_; }
  // Any thread. Looked up once; a lookup made after the fd was handed over,
  // or after the peer reset the connection, fails and leaves the fallback.
  [[nodiscard]] SocketAddress address(Which which) const LIBNET_EXCLUDES(mutex_);
  // Any thread. A Unix socket's peer credentials, looked up once; nullopt
  // on TCP, and if the first lookup comes after the fd was handed over.
  [[nodiscard]] std::optional<ucred> peerCredentials() const LIBNET_EXCLUDES(mutex_);
  // The I/O strategy is done with the fd: it takes it (to close it).
  [[nodiscard]] UniqueFd releaseFd() LIBNET_EXCLUDES(mutex_);

 private:
  static constexpr uint8_t kCredentials = 4;

  Socket socket_;  // emptied, under mutex_, when the fd is handed over
  // Written once under the mutex, then read without it once its bit is set,
  // a publication the analysis cannot follow, so they carry no
  // LIBNET_GUARDED_BY.
  mutable Mutex mutex_;
  mutable std::atomic<uint8_t> known_{0};  // Which bits, and kCredentials
  mutable SocketAddress local_;
  mutable SocketAddress peer_;
  mutable std::optional<ucred> credentials_;
};

}  // namespace libnet
