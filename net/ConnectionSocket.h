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
// Memory: every connection has one, so it is kept small (72 bytes). An IPv4
// or IPv6 address is kept inline (an InetAddress, 28 bytes); a Unix
// socket's addresses (a sockaddr_un is 110 bytes) and credentials live in a
// block of their own, made for a Unix socket only. The lock is one of a few
// that all connections share (lock()): it is taken once per lookup and
// once when the fd is handed over, never per message, so a mutex of its own
// (40 bytes) would cost every connection more than the rare wait on another
// connection's lookup costs anyone.
//
// Owned by its TcpConnection (TcpConnection::Impl). address() and
// peerCredentials() from any thread; the rest on the connection's loop
// thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "base/Mutex.h"
#include "base/UniqueFd.h"
#include "net/InetAddress.h"
#include "net/Socket.h"
#include "net/SocketAddress.h"

namespace libnet {

class ConnectionSocket {
 public:
  enum Which : uint8_t { kLocal = 1, kPeer = 2 };

  // `localFallback` is what the local address is if the lookup can no
  // longer be made (a server's listening address); the peer's is then the
  // empty address (0.0.0.0:0, or "unix:" on a Unix socket).
  ConnectionSocket(UniqueFd fd, std::optional<SocketAddress> local,
                   std::optional<SocketAddress> peer, const SocketAddress& localFallback);
  ~ConnectionSocket();
  ConnectionSocket(const ConnectionSocket&) = delete;
  ConnectionSocket& operator=(const ConnectionSocket&) = delete;

  [[nodiscard]] int fd() const { return socket_.fd(); }
  [[nodiscard]] Socket& socket() { return socket_; }
  // Any thread. Looked up once; a lookup made after the fd was handed over,
  // or after the peer reset the connection, fails and leaves the fallback.
  [[nodiscard]] SocketAddress address(Which which) const;
  // Any thread. A Unix socket's peer credentials, looked up once; nullopt
  // on TCP, and if the first lookup comes after the fd was handed over.
  [[nodiscard]] std::optional<ucred> peerCredentials() const;
  // The I/O strategy is done with the fd: it takes it (to close it).
  [[nodiscard]] UniqueFd releaseFd();

 private:
  static constexpr uint8_t kCredentials = 4;
  // known_'s bits saying where an address is kept: (Which << kInUnixPart)
  // when in unix_, clear when inline.
  static constexpr int kInUnixPart = 3;
  struct UnixPart;
  // The lock of this connection's lookups and hand-over: shared with the
  // connections whose address falls in the same stripe.
  [[nodiscard]] Mutex& lock() const;
  // Keeps `address` as `which`: inline if it is IPv4 or IPv6, else in the
  // Unix block (made now if need be). Returns where it went (its bit of
  // kInUnixPart, or 0), for known_. At construction, or under lock() before
  // the bit of `which` is set in known_.
  uint8_t keep(Which which, const SocketAddress& address) const;
  // What is kept as `which`, given known_'s bits.
  [[nodiscard]] SocketAddress kept(Which which, uint8_t bits) const;

  Socket socket_;  // emptied, under lock(), when the fd is handed over
  // Written under lock() (or at construction), then read without it once
  // the bit of what was written is set in known_ (release/acquire). The
  // bits of where each address is kept change only under the lock, before
  // that address's own bit is set.
  mutable std::atomic<uint8_t> known_{0};  // Which bits, kCredentials, kInUnixPart bits
  mutable InetAddress local_;
  mutable InetAddress peer_;
  mutable std::unique_ptr<UnixPart> unix_;
};

}  // namespace libnet
