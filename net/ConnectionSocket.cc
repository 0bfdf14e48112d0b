#include "net/ConnectionSocket.h"

namespace libnet {

ConnectionSocket::ConnectionSocket(UniqueFd fd, std::optional<InetAddress> local,
                                   std::optional<InetAddress> peer,
                                   const InetAddress& localFallback)
    : socket_(std::move(fd)),
      known_(static_cast<uint8_t>((local ? kLocal : 0) | (peer ? kPeer : 0))),
      local_(local.value_or(localFallback)),
      peer_(peer.value_or(InetAddress())) {}

InetAddress ConnectionSocket::address(Which which) const {
  InetAddress& slot = which == kLocal ? local_ : peer_;
  if (known_.load(std::memory_order_acquire) & which) return slot;
  MutexLock lock(mutex_);
  if ((known_.load(std::memory_order_relaxed) & which) == 0) {
    // Still open: releaseFd() takes the fd under this mutex. A failed lookup
    // (the peer reset the connection already) leaves the fallback.
    if (socket_.fd() >= 0) {
      if (std::optional<InetAddress> found = Socket::tryAddress(socket_.fd(), which == kPeer)) {
        slot = *found;
      }
    }
    known_.fetch_or(which, std::memory_order_release);
  }
  return slot;
}

UniqueFd ConnectionSocket::releaseFd() {
  MutexLock lock(mutex_);
  return socket_.releaseFd();
}

}  // namespace libnet
