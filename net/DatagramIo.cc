#include "net/DatagramIo.h"

#include <sys/socket.h>

#include <cerrno>

namespace libnet {

DatagramIo::SendStatus DatagramIo::sendNow(const InetAddress* to, std::string_view data,
                                           int* err) const {
  msghdr msg{};
  iovec iov{const_cast<char*>(data.data()), data.size()};
  if (to != nullptr) {
    msg.msg_name = const_cast<sockaddr*>(to->sockAddr());
    msg.msg_namelen = to->sockLen();
  }
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ssize_t n;
  do {
    n = ::sendmsg(fd(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n >= 0) return SendStatus::kSent;
  if (errno == EAGAIN || errno == ENOBUFS) return SendStatus::kQueued;
  *err = errno;
  return SendStatus::kError;
}

}  // namespace libnet
