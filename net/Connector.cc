#include "net/Connector.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <utility>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/ConnectAttempt.h"
#include "net/EventLoop.h"
#include "net/Socket.h"

namespace libnet {

Connector::Connector(EventLoop* loop, const SocketAddress& serverAddr, Duration initialRetryDelay,
                     Duration maxRetryDelay)
    : loop_(loop),
      serverAddr_(serverAddr),
      initialRetryDelay_(initialRetryDelay),
      maxRetryDelay_(maxRetryDelay),
      retryDelay_(initialRetryDelay) {
  if (initialRetryDelay_ <= Duration::zero()) {
    throw std::invalid_argument("Connector: the initial retry delay must be positive");
  }
  if (maxRetryDelay_ < initialRetryDelay_) {
    throw std::invalid_argument("Connector: the maximum retry delay is below the initial one");
  }
}

Connector::Connector(EventLoop* loop, HappyEyeballs::Request byName, Duration initialRetryDelay,
                     Duration maxRetryDelay)
    : Connector(loop, InetAddress(), initialRetryDelay, maxRetryDelay) {
  HappyEyeballs::check(byName);
  byName_ = std::move(byName);
}

Connector::~Connector() {
  // stop() clears any channel on the loop thread; dying with one registered is
  // a lifetime bug in the owner.
  if (channel_) {
    LOG_ERROR << "Connector to " << target() << " destroyed mid-connect";
  }
}

void Connector::start() {
  connect_ = true;
  // Queued even on the loop thread: start() called from inside one of our
  // callbacks (a connect error, say) must not recurse into the next attempt,
  // which may fail at once and call back again.
  loop_->queueInLoop([self = shared_from_this()] { self->startInLoop(); });
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
  if (round_) {
    state_ = State::kDisconnected;
    std::exchange(round_, nullptr)->stop();
  }
  if (state_ == State::kConnecting) {
    state_ = State::kDisconnected;
    removeAndResetChannel();  // the fd it returns closes here: attempt abandoned
  }
}

void Connector::connect() {
  // One chain of retries: an attempt started by start() or restart() while a
  // retry timer is pending replaces that retry.
  loop_->cancel(retryTimer_);
  retryTimer_ = TimerId();
  attempts_.fetch_add(1);
  if (byName_) {
    connectByName();
    return;
  }
  ConnectAttempt::Begun begun = ConnectAttempt::begin(serverAddr_);
  if (begun.error == 0) {
    connecting(std::move(begun.fd));
  } else {
    failed(std::move(begun.fd), begun.error, begun.permanent);
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
  if (const int err = ConnectAttempt::outcome(fd.get(), serverAddr_); err != 0) {
    failed(std::move(fd), err, false);
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
  int err = Socket::getSocketError(fd.get());
  LOG_DEBUG << "connect to " << serverAddr_.toIpPort() << " error: " << strerrorTl(err);
  // EPOLLERR with SO_ERROR already cleared should not happen; the user still
  // needs a non-zero reason.
  if (err == 0) err = EIO;
  failed(std::move(fd), err, false);
}

void Connector::failed(UniqueFd fd, int error, bool permanent) {
  // Closed before anyone hears of the failure: a user that stops here leaves
  // no socket behind.
  fd.reset();
  state_ = State::kDisconnected;
  if (!connect_) return;  // stopped meanwhile: nobody is waiting for news
  if (permanent) connect_ = false;
  if (errorCallback_) {
    // Our owner may let go of us from inside the callback; the lines below
    // still read our members.
    auto self = shared_from_this();
    errorCallback_(error);
  }
  // The callback may have called stop() (connect_ is now false: no timer),
  // restart() (an attempt is in progress: it schedules its own retry), or
  // start(), whose attempt is queued: the retry scheduled here is then
  // replaced by it (connect() cancels the timer), though the delay has
  // already doubled.
  if (!permanent && state_ == State::kDisconnected) retry();
}

void Connector::retry() {
  if (!connect_) return;
  LOG_DEBUG << "retrying connect to " << target() << " in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(retryDelay_).count() << " ms";
  retryTimer_ = loop_->runAfter(retryDelay_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->startInLoop();
  });
  retryDelay_ = std::min(retryDelay_ * 2, maxRetryDelay_);
}

std::string Connector::target() const {
  return byName_ ? InetAddress::joinHostPort(byName_->host, byName_->port) : serverAddr_.toIpPort();
}

ConnectFailure Connector::layerFailure(std::string reason) const {
  ConnectFailure failure;
  if (byName_) {
    failure.host = byName_->host;
    failure.port = byName_->port;
  } else if (serverAddr_.isUnix()) {
    failure.host = serverAddr_.toString();  // "unix:/path": no port
  } else {
    failure.host = serverAddr_.toIp();
    failure.port = serverAddr_.port();
  }
  failure.layer = std::move(reason);
  return failure;
}

void Connector::connectByName() {
  state_ = State::kConnecting;
  round_ = HappyEyeballs::create(loop_, *byName_);
  std::weak_ptr<Connector> weak = weak_from_this();
  round_->start(
      [weak](UniqueFd fd, const InetAddress&) {
        auto self = weak.lock();
        if (!self) return;
        self->round_.reset();
        self->state_ = State::kConnected;
        if (self->connect_ && self->callback_) self->callback_(std::move(fd));
      },
      [weak](const ConnectFailure& failure) {
        if (auto self = weak.lock()) self->failedByName(failure);
      });
}

void Connector::failedByName(const ConnectFailure& failure) {
  round_.reset();
  state_ = State::kDisconnected;
  if (connect_ && failureCallback_) failureCallback_(failure);
  failed(UniqueFd(), failure.error(), failure.permanent());
}

}  // namespace libnet
