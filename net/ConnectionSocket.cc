#include "net/ConnectionSocket.h"

#include <cstddef>
#include <cstdint>

namespace libnet {

// What only a Unix socket's connection has: addresses that do not fit an
// InetAddress, and the peer's credentials.
struct ConnectionSocket::UnixPart {
  SocketAddress local;
  SocketAddress peer;
  std::optional<ucred> credentials;
};

namespace {

// The locks connections share (see the header): enough that two loops
// rarely meet on one.
constexpr size_t kLockStripes = 64;
Mutex g_locks[kLockStripes];

}  // namespace

ConnectionSocket::ConnectionSocket(UniqueFd fd, std::optional<SocketAddress> local,
                                   std::optional<SocketAddress> peer,
                                   const SocketAddress& localFallback)
    : socket_(std::move(fd)) {
  uint8_t bits = static_cast<uint8_t>((local ? kLocal : 0) | (peer ? kPeer : 0));
  bits |= keep(kLocal, local.value_or(localFallback));
  if (peer) {
    bits |= keep(kPeer, *peer);
  } else if (localFallback.isUnix()) {
    // A Unix socket's unnamed peer, rather than 0.0.0.0:0, when the lookup
    // fails.
    sockaddr_storage unnamed{};
    unnamed.ss_family = AF_UNIX;
    bits |= keep(kPeer, SocketAddress::fromSockAddr(unnamed, sizeof unnamed.ss_family));
  }
  known_.store(bits, std::memory_order_relaxed);
}

ConnectionSocket::~ConnectionSocket() = default;

Mutex& ConnectionSocket::lock() const {
  // Connections are allocated at least 16 bytes apart; the bits above those
  // spread neighbours over the stripes.
  return g_locks[(reinterpret_cast<uintptr_t>(this) >> 4) % kLockStripes];
}

uint8_t ConnectionSocket::keep(Which which, const SocketAddress& address) const {
  if (std::optional<InetAddress> inet = address.inet()) {
    (which == kLocal ? local_ : peer_) = *inet;
    return 0;
  }
  if (!unix_) unix_ = std::make_unique<UnixPart>();
  (which == kLocal ? unix_->local : unix_->peer) = address;
  return static_cast<uint8_t>(which << kInUnixPart);
}

SocketAddress ConnectionSocket::kept(Which which, uint8_t bits) const {
  if (bits & (which << kInUnixPart)) return which == kLocal ? unix_->local : unix_->peer;
  return which == kLocal ? local_ : peer_;
}

SocketAddress ConnectionSocket::address(Which which) const {
  const uint8_t bits = known_.load(std::memory_order_acquire);
  if (bits & which) return kept(which, bits);
  MutexLock guard(lock());
  if ((known_.load(std::memory_order_relaxed) & which) == 0) {
    // Still open: releaseFd() takes the fd under this lock. A failed lookup
    // (the peer reset the connection already) leaves the fallback.
    if (socket_.fd() >= 0) {
      if (std::optional<SocketAddress> found = Socket::tryAddress(socket_.fd(), which == kPeer)) {
        const uint8_t where = keep(which, *found);
        known_.fetch_and(static_cast<uint8_t>(~(which << kInUnixPart)), std::memory_order_relaxed);
        known_.fetch_or(where, std::memory_order_relaxed);
      }
    }
    known_.fetch_or(which, std::memory_order_release);
  }
  return kept(which, known_.load(std::memory_order_relaxed));
}

std::optional<ucred> ConnectionSocket::peerCredentials() const {
  // Only a Unix socket has any (SO_PEERCRED answers on TCP too, with pid 0
  // and uid and gid -1), and its local address is kept in the Unix block.
  const bool unixSocket = address(kLocal).isUnix();
  if (!unixSocket) return std::nullopt;
  if (known_.load(std::memory_order_acquire) & kCredentials) return unix_->credentials;
  MutexLock guard(lock());
  if ((known_.load(std::memory_order_relaxed) & kCredentials) == 0) {
    if (socket_.fd() >= 0) unix_->credentials = Socket::peerCredentials(socket_.fd());
    known_.fetch_or(kCredentials, std::memory_order_release);
  }
  return unix_->credentials;
}

UniqueFd ConnectionSocket::releaseFd() {
  MutexLock guard(lock());
  return socket_.releaseFd();
}

}  // namespace libnet
