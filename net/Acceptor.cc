#include "net/Acceptor.h"

#include <fcntl.h>

#include <cerrno>

#include "base/Logging.h"
#include "net/EventLoop.h"

namespace libnet {

namespace {
UniqueFd openSpareFd() { return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }
}  // namespace

Acceptor::Acceptor(EventLoop* loop, const InetAddress& listenAddr, bool reusePort)
    : loop_(loop),
      socket_(Socket::createNonblocking(listenAddr.family())),
      channel_(loop, socket_.fd()),
      spareFd_(openSpareFd()) {
  socket_.setReuseAddr(true);
  if (reusePort) socket_.setReusePort(true);
  socket_.bindAddress(listenAddr);
  channel_.setReadCallback([this](Timestamp) { handleRead(); });
}

Acceptor::~Acceptor() {
  channel_.disableAll();
  channel_.remove();
}

void Acceptor::listen() {
  loop_->assertInLoopThread();
  if (listening_) return;
  socket_.listen();
  listening_ = true;
  channel_.enableReading();
}

void Acceptor::handleRead() {
  loop_->assertInLoopThread();
  for (;;) {
    InetAddress peer;
    UniqueFd fd = socket_.accept(&peer);
    if (fd) {
      if (callback_) callback_(std::move(fd), peer);
      continue;
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
    if (err == EMFILE || err == ENFILE) {
      if (!dropOneForFdLimit()) return;
      continue;
    }
    // ENOBUFS, ENOMEM, EPERM (firewall): nothing to do but report. Stop this
    // round; the next connection's edge brings us back.
    errno = err;
    LOG_SYSERR << "accept on " << localAddress().toIpPort();
    return;
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
