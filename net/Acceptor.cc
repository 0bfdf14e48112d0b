#include "net/Acceptor.h"

#include <fcntl.h>
#include <liburing.h>

#include <cerrno>

#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/poller/UringPoller.h"

namespace libnet {

namespace {
UniqueFd openSpareFd() { return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }
}  // namespace

Acceptor::Acceptor(EventLoop* loop, const InetAddress& listenAddr, bool reusePort)
    : loop_(loop),
      socket_(Socket::createNonblocking(listenAddr.family())),
      channel_(loop, socket_.fd()),
      spareFd_(openSpareFd()),
      uring_(loop->uring()) {
  socket_.setReuseAddr(true);
  if (reusePort) socket_.setReusePort(true);
  socket_.bindAddress(listenAddr);
  channel_.setReadCallback([this](Timestamp) { handleRead(); });
}

Acceptor::~Acceptor() {
  if (uringToken_ != 0) {
    if (acceptArmed_) {
      io_uring_sqe* sqe = uring_->getSqe();
      io_uring_prep_cancel64(sqe, UringPoller::userData(UringOp::kAccept, uringToken_), 0);
      io_uring_sqe_set_data64(sqe, UringPoller::userData(UringOp::kIgnore, 0));
    }
    // A connection accepted before the cancel lands is closed by the poller.
    uring_->unregisterHandler(uringToken_);
  }
  channel_.disableAll();
  channel_.remove();
}

void Acceptor::listen() {
  loop_->assertInLoopThread();
  if (listening_) return;
  socket_.listen();
  listening_ = true;
  if (uring_) {
    uringToken_ = uring_->registerHandler(this);
    armAccept();
  } else {
    channel_.enableReading();
  }
}

void Acceptor::armAccept() {
  io_uring_sqe* sqe = uring_->getSqe();
  io_uring_prep_multishot_accept(sqe, socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  io_uring_sqe_set_data64(sqe, UringPoller::userData(UringOp::kAccept, uringToken_));
  acceptArmed_ = true;
}

void Acceptor::onCompletion(UringOp, int32_t res, uint32_t flags) {
  if (!(flags & IORING_CQE_F_MORE)) acceptArmed_ = false;
  if (res >= 0) {
    UniqueFd fd(res);
    // Multishot accept has no per-connection address buffer: ask the socket.
    // A peer that reset the connection in the meantime leaves none, and a
    // dead connection is not worth handing on (nor an error line).
    if (std::optional<InetAddress> peer = Socket::tryPeerAddress(res)) {
      deliver(std::move(fd), *peer);
    } else {
      LOG_DEBUG << "accept on " << localAddress().toIpPort() << ": peer gone before getpeername ("
                << strerrorTl(errno) << ")";
    }
  } else if (res == -EMFILE || res == -ENFILE) {
    // Drop what is pending through the spare fd, as the epoll path does.
    while (dropOneForFdLimit()) {
    }
    // io_uring's accept takes an fd before it looks at the queue, so while the
    // table is full a re-armed accept fails at once, forever. Wait for the
    // next connection by readiness instead; handleRead() goes back to the
    // multishot accept once an accept succeeds.
    if (!acceptArmed_) {
      channel_.enableReading();
      return;
    }
  } else if (res == -ECANCELED) {
    return;
  } else if (res != -EAGAIN && res != -EINTR && res != -ECONNABORTED && res != -EPROTO) {
    errno = -res;
    LOG_SYSERR << "accept on " << localAddress().toIpPort();
  }
  if (!acceptArmed_) armAccept();
}

void Acceptor::deliver(UniqueFd fd, const InetAddress& peer) {
  if (callback_) callback_(std::move(fd), peer);
}

void Acceptor::handleRead() {
  loop_->assertInLoopThread();
  const bool acceptedAny = drainAccepts();
  if (uring_ && acceptedAny && !acceptArmed_) {
    channel_.disableAll();  // fds are available again
    armAccept();
  }
}

bool Acceptor::drainAccepts() {
  bool acceptedAny = false;
  for (;;) {
    InetAddress peer;
    UniqueFd fd = socket_.accept(&peer);
    if (fd) {
      deliver(std::move(fd), peer);
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
