#include "net/Socket.h"

#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

#include "base/Logging.h"

namespace libnet {

namespace {

void setBoolOption(int fd, int level, int name, bool on, const char* what) {
  const int value = on ? 1 : 0;
  if (::setsockopt(fd, level, name, &value, sizeof value) < 0) {
    LOG_SYSERR << "setsockopt " << what << " fd=" << fd;
  }
}

}  // namespace

Socket Socket::createNonblocking(sa_family_t family) {
  // Protocol 0: TCP for AF_INET/AF_INET6, the only one for AF_UNIX.
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "socket");
  return Socket(UniqueFd(fd));
}

void Socket::bindAddress(const SocketAddress& local) {
  if (::bind(fd_.get(), local.sockAddr(), local.sockLen()) < 0) {
    throw std::system_error(errno, std::system_category(), "bind " + local.toIpPort());
  }
}

void Socket::listen(int backlog) {
  if (::listen(fd_.get(), backlog) < 0) {
    throw std::system_error(errno, std::system_category(),
                            "listen " + localAddress(fd_.get()).toIpPort());
  }
}

UniqueFd Socket::accept(SocketAddress* peer) {
  sockaddr_storage storage{};
  socklen_t len = sizeof storage;
  const int fd = ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&storage), &len,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0 && peer) *peer = SocketAddress::fromSockAddr(storage, len);
  return UniqueFd(fd);
}

void Socket::shutdownWrite() {
  if (::shutdown(fd_.get(), SHUT_WR) < 0 && errno != ENOTCONN) {
    LOG_SYSERR << "shutdown(SHUT_WR) fd=" << fd_.get();
  }
}

void Socket::setTcpNoDelay(bool on) {
  const int value = on ? 1 : 0;
  // EOPNOTSUPP: a Unix socket (no TCP options to set).
  if (::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &value, sizeof value) < 0 &&
      errno != EOPNOTSUPP) {
    LOG_SYSERR << "setsockopt TCP_NODELAY fd=" << fd_.get();
  }
}

void Socket::setReuseAddr(bool on) {
  setBoolOption(fd_.get(), SOL_SOCKET, SO_REUSEADDR, on, "SO_REUSEADDR");
}

void Socket::setReusePort(bool on) {
  const int value = on ? 1 : 0;
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEPORT, &value, sizeof value) < 0 && on) {
    throw std::system_error(errno, std::system_category(), "setsockopt SO_REUSEPORT");
  }
}

void Socket::setKeepAlive(bool on) {
  setBoolOption(fd_.get(), SOL_SOCKET, SO_KEEPALIVE, on, "SO_KEEPALIVE");
}

int Socket::getSocketError(int fd) {
  int value = 0;
  socklen_t len = sizeof value;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &len) < 0) return errno;
  return value;
}

SocketAddress Socket::localAddress(int fd) {
  if (std::optional<SocketAddress> address = tryAddress(fd, false)) return *address;
  LOG_SYSERR << "getsockname fd=" << fd;
  return InetAddress();
}

SocketAddress Socket::peerAddress(int fd) {
  if (std::optional<SocketAddress> address = tryAddress(fd, true)) return *address;
  if (errno == ENOTCONN) {
    LOG_DEBUG << "getpeername fd=" << fd << ": the peer is gone";
  } else {
    LOG_SYSERR << "getpeername fd=" << fd;
  }
  return InetAddress();
}

std::optional<SocketAddress> Socket::tryAddress(int fd, bool peer) {
  sockaddr_storage storage{};
  socklen_t len = sizeof storage;
  auto* sa = reinterpret_cast<sockaddr*>(&storage);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return std::nullopt;
  return SocketAddress::fromSockAddr(storage, len);
}

std::optional<ucred> Socket::peerCredentials(int fd) {
  ucred credentials{};
  socklen_t len = sizeof credentials;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &len) != 0) return std::nullopt;
  return credentials;
}

bool Socket::isPeerError(int err) {
  switch (err) {
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
    case ETIMEDOUT:
    case ECONNABORTED:
    case EPROTO:  // a TLS peer that broke the protocol (net/tls)
    case EHOSTUNREACH:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

bool Socket::isSelfConnect(int fd) { return localAddress(fd) == peerAddress(fd); }

}  // namespace libnet
