#include "net/Connector.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/EventLoop.h"
#include "net/Socket.h"

namespace libnet {

Connector::Connector(EventLoop* loop, const InetAddress& serverAddr)
    : loop_(loop), serverAddr_(serverAddr) {}

Connector::~Connector() {
  // stop() clears any channel on the loop thread; dying with one registered is
  // a lifetime bug in the owner.
  if (channel_) {
    LOG_ERROR << "Connector to " << serverAddr_.toIpPort() << " destroyed mid-connect";
  }
}

void Connector::start() {
  connect_ = true;
  loop_->runInLoop([self = shared_from_this()] { self->startInLoop(); });
}

void Connector::restart() {
  loop_->assertInLoopThread();
  state_ = State::kDisconnected;
  retryDelay_ = initialRetryDelay_;
  connect_ = true;
  startInLoop();
}

void Connector::stop() {
  connect_ = false;
  loop_->runInLoop([self = shared_from_this()] { self->stopInLoop(); });
}

void Connector::startInLoop() {
  loop_->assertInLoopThread();
  if (!connect_ || state_ != State::kDisconnected) return;
  connect();
}

void Connector::stopInLoop() {
  loop_->assertInLoopThread();
  loop_->cancel(retryTimer_);
  retryTimer_ = TimerId();
  if (state_ == State::kConnecting) {
    state_ = State::kDisconnected;
    removeAndResetChannel();  // the fd it returns closes here: attempt abandoned
  }
}

void Connector::connect() {
  attempts_.fetch_add(1);
  UniqueFd fd;
  try {
    fd = Socket::createNonblocking(serverAddr_.family()).releaseFd();
  } catch (const std::system_error& e) {
    // EMFILE and friends: transient, worth retrying.
    LOG_ERROR << "Connector to " << serverAddr_.toIpPort() << ": " << e.what();
    retry(UniqueFd());
    return;
  }
  const int rc = ::connect(fd.get(), serverAddr_.getSockAddr(), serverAddr_.sockLen());
  const int err = rc == 0 ? 0 : errno;
  switch (err) {
    case 0:
    case EINPROGRESS:
    case EINTR:
    case EISCONN:
      connecting(std::move(fd));
      break;
    case EAGAIN:
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case ECONNREFUSED:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ETIMEDOUT:
      retry(std::move(fd));
      break;
    default:
      // EACCES, EPERM, EAFNOSUPPORT, EBADF, ...: retrying cannot help.
      errno = err;
      LOG_SYSERR << "connect to " << serverAddr_.toIpPort() << " failed for good";
      state_ = State::kDisconnected;
      connect_ = false;
      break;
  }
}

void Connector::connecting(UniqueFd fd) {
  state_ = State::kConnecting;
  connectingFd_ = std::move(fd);
  channel_ = std::make_unique<Channel>(loop_, connectingFd_.get());
  // Raw `this` is safe here: the channel is owned by this object and removed
  // before it dies; events are dropped once the tie expires.
  channel_->tie(shared_from_this());
  channel_->setWriteCallback([this] { handleWrite(); });
  channel_->setErrorCallback([this] { handleError(); });
  channel_->enableWriting();
}

UniqueFd Connector::removeAndResetChannel() {
  channel_->disableAll();
  channel_->remove();
  // We may be inside this channel's own handler: destroy it after the
  // current event dispatch, not now.
  loop_->queueInLoop([channel = std::shared_ptr<Channel>(std::move(channel_))] {});
  return std::move(connectingFd_);
}

void Connector::handleWrite() {
  if (state_ != State::kConnecting) return;
  UniqueFd fd = removeAndResetChannel();
  const int err = Socket::getSocketError(fd.get());
  if (err != 0) {
    LOG_DEBUG << "connect to " << serverAddr_.toIpPort() << ": " << strerrorTl(err);
    retry(std::move(fd));
  } else if (Socket::isSelfConnect(fd.get())) {
    LOG_WARN << "connect to " << serverAddr_.toIpPort() << " connected to itself; retrying";
    retry(std::move(fd));
  } else {
    state_ = State::kConnected;
    if (connect_ && callback_) {
      callback_(std::move(fd));
    }  // else: stopped meanwhile; fd closes here
  }
}

void Connector::handleError() {
  if (state_ != State::kConnecting) return;
  UniqueFd fd = removeAndResetChannel();
  const int err = Socket::getSocketError(fd.get());
  LOG_DEBUG << "connect to " << serverAddr_.toIpPort() << " error: " << strerrorTl(err);
  retry(std::move(fd));
}

void Connector::retry(UniqueFd fd) {
  fd.reset();
  state_ = State::kDisconnected;
  if (!connect_) return;
  LOG_DEBUG << "retrying connect to " << serverAddr_.toIpPort() << " in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(retryDelay_).count() << " ms";
  retryTimer_ = loop_->runAfter(retryDelay_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->startInLoop();
  });
  retryDelay_ = std::min(retryDelay_ * 2, maxRetryDelay_);
}

}  // namespace libnet
