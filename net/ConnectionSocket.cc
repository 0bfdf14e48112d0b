#include "net/ConnectionSocket.h"

namespace libnet {

ConnectionSocket::ConnectionSocket(UniqueFd fd, std::optional<SocketAddress> local,
                                   std::optional<SocketAddress> peer,
                                   const SocketAddress& localFallback)
    : socket_(std::move(fd)),
      known_(static_cast<uint8_t>((local ? kLocal : 0) | (peer ? kPeer : 0))),
      local_(local.value_or(localFallback)),
      peer_(peer.value_or(SocketAddress())) {
  // A Unix socket's unnamed peer, rather than 0.0.0.0:0, when the lookup
  // fails.
  if (!peer && localFallback.isUnix()) {
    sockaddr_storage unnamed{};
    unnamed.ss_family = AF_UNIX;
    peer_ = SocketAddress::fromSockAddr(unnamed, sizeof unnamed.ss_family);
  }
}

SocketAddress ConnectionSocket::address(Which which) const {
  SocketAddress& slot = which == kLocal ? local_ : peer_;
  if (known_.load(std::memory_order_acquire) & which) return slot;
  MutexLock lock(mutex_);
  if ((known_.load(std::memory_order_relaxed) & which) == 0) {
    // Still open: releaseFd() takes the fd under this mutex. A failed lookup
    // (the peer reset the connection already) leaves the fallback.
    if (socket_.fd() >= 0) {
      if (std::optional<SocketAddress> found = Socket::tryAddress(socket_.fd(), which == kPeer)) {
        slot = *found;
      }
    }
    known_.fetch_or(which, std::memory_order_release);
  }
  return slot;
}

std::optional<ucred> ConnectionSocket::peerCredentials() const {
  if (known_.load(std::memory_order_acquire) & kCredentials) return credentials_;
  // SO_PEERCRED answers on TCP too (pid 0, uid and gid -1): ask Unix only.
  const bool unixSocket = address(kLocal).isUnix();
  MutexLock lock(mutex_);
  if ((known_.load(std::memory_order_relaxed) & kCredentials) == 0) {
    if (unixSocket && socket_.fd() >= 0) credentials_ = Socket::peerCredentials(socket_.fd());
    known_.fetch_or(kCredentials, std::memory_order_release);
  }
  return credentials_;
}

UniqueFd ConnectionSocket::releaseFd() {
  MutexLock lock(mutex_);
  return socket_.releaseFd();
}

}  // namespace libnet
