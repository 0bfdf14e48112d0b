#include "net/Acceptor.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/Poller.h"

namespace libnet {

namespace {
UniqueFd openSpareFd() { return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }
}  // namespace

Acceptor::Acceptor(EventLoop* loop, const InetAddress& listenAddr, bool reusePort)
    : loop_(loop),
      socket_(Socket::createNonblocking(listenAddr.family())),
      spareFd_(openSpareFd()) {
  socket_.setReuseAddr(true);
  if (reusePort) socket_.setReusePort(true);
  socket_.bindAddress(listenAddr);
  io_ = loop_->poller().newAcceptorIo(this, socket_.fd());
}

Acceptor::~Acceptor() = default;

void Acceptor::listen() {
  if (listening_) return;
  socket_.listen();
  listening_ = true;
  // Queued (from another thread) ahead of anything that could destroy us on
  // the loop.
  loop_->runInLoop([this] { io_->start(); });
}

void Acceptor::setDeferAccept(int seconds) {
  if (::setsockopt(socket_.fd(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds) < 0) {
    throw std::system_error(errno, std::system_category(),
                            "setsockopt TCP_DEFER_ACCEPT " + localAddress().toIpPort());
  }
}

void Acceptor::onAccepted(UniqueFd fd, const std::optional<InetAddress>& peer) {
  if (callback_) callback_(std::move(fd), peer);
}

bool Acceptor::acceptPending() {
  loop_->assertInLoopThread();
  bool acceptedAny = false;
  for (;;) {
    InetAddress peer;
    UniqueFd fd = socket_.accept(&peer);
    if (fd) {
      onAccepted(std::move(fd), peer);
      acceptedAny = true;
      continue;
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return acceptedAny;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
    if (err == EMFILE || err == ENFILE) {
      if (!dropOneForFdLimit()) return acceptedAny;
      continue;
    }
    // ENOBUFS, ENOMEM, EPERM (firewall): nothing to do but report. Stop this
    // round; the next connection's edge brings us back.
    errno = err;
    LOG_SYSERR << "accept on " << localAddress().toIpPort();
    return acceptedAny;
  }
}

bool Acceptor::dropOneForFdLimit() {
  if (!spareFd_) {
    spareFd_ = openSpareFd();
    LOG_ERROR << "out of file descriptors and no spare fd; pending connections on "
              << localAddress().toIpPort() << " wait for the next one";
    return false;
  }
  spareFd_.reset();
  UniqueFd victim = socket_.accept(nullptr);
  const bool accepted = victim.valid();
  victim.reset();
  spareFd_ = openSpareFd();
  if (!accepted) return false;  // drained (EAGAIN) or failing: stop this round
  ++droppedForFdLimit_;
  LOG_WARN << "out of file descriptors: closed a new connection on " << localAddress().toIpPort()
           << " (" << droppedForFdLimit_ << " so far)";
  return spareFd_.valid();
}

}  // namespace libnet
