#include "pingpong/floor/FloorSetup.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <cerrno>

namespace pingpong {
namespace {

[[noreturn]] void throwErrno(const char* call) {
  throw std::system_error(errno, std::generic_category(), call);
}

void setFlag(int fd, int level, int option, const char* name) {
  const int one = 1;
  if (::setsockopt(fd, level, option, &one, sizeof one) < 0) throwErrno(name);
}

}  // namespace

std::vector<UniqueFd> openListeners(const Endpoint& endpoint, int count, uint16_t& boundPort) {
  std::vector<UniqueFd> listeners;
  sockaddr_storage addr = endpoint.storage;
  for (int i = 0; i < count; ++i) {
    UniqueFd fd(::socket(endpoint.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) throwErrno("socket");
    // SO_REUSEADDR lets a restarted server bind while old connections sit in
    // TIME_WAIT; it does not allow sharing a port that is being listened on.
    setFlag(fd.get(), SOL_SOCKET, SO_REUSEADDR, "setsockopt(SO_REUSEADDR)");
    // Only with several loops: SO_REUSEPORT would also let this server share
    // a port with another SO_REUSEPORT listener of the same user instead of
    // failing with EADDRINUSE, which a single-loop server has no need for.
    if (count > 1) setFlag(fd.get(), SOL_SOCKET, SO_REUSEPORT, "setsockopt(SO_REUSEPORT)");
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), endpoint.length) < 0) {
      throwErrno("bind");
    }
    if (::listen(fd.get(), SOMAXCONN) < 0) throwErrno("listen");
    if (i == 0) {
      socklen_t len = sizeof addr;
      if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
        throwErrno("getsockname");
      }
      boundPort =
          ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port
                                           : reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
    }
    listeners.push_back(std::move(fd));
  }
  return listeners;
}

UniqueFd blockTerminationSignals() {
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (const int err = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    throw std::system_error(err, std::generic_category(), "pthread_sigmask");
  }
  UniqueFd fd(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd.valid()) throwErrno("signalfd");
  return fd;
}

}  // namespace pingpong
