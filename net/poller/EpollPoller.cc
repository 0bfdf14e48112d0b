#include "net/poller/EpollPoller.h"

#include <cerrno>
#include <system_error>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/EventLoop.h"
#include "net/poller/EpollAcceptorIo.h"
#include "net/poller/EpollConnectionIo.h"

namespace libnet {

namespace {
// Channel::pollerState() values.
constexpr int kNew = -1;
constexpr int kAdded = 1;
constexpr int kDetached = 2;  // known, but with no interest: not in the epoll set
}  // namespace

EpollPoller::EpollPoller(EventLoop* loop)
    : Poller(loop), epollFd_(::epoll_create1(EPOLL_CLOEXEC)), events_(kInitEventListSize) {
  if (!epollFd_) throw std::system_error(errno, std::system_category(), "epoll_create1");
}

EpollPoller::~EpollPoller() = default;

Timestamp EpollPoller::poll(Duration timeout, ChannelList* active) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
  const int n = ::epoll_wait(epollFd_.get(), events_.data(), static_cast<int>(events_.size()),
                             static_cast<int>(ms));
  const int savedErrno = errno;
  const Timestamp now = Timestamp::now();
  if (n > 0) {
    for (int i = 0; i < n; ++i) {
      auto* channel = static_cast<Channel*>(events_[static_cast<size_t>(i)].data.ptr);
      channel->setReturnedEvents(events_[static_cast<size_t>(i)].events);
      active->push_back(channel);
    }
    // A full batch suggests more were ready: take more next time.
    if (static_cast<size_t>(n) == events_.size()) events_.resize(events_.size() * 2);
  } else if (n < 0 && savedErrno != EINTR) {
    errno = savedErrno;
    LOG_SYSERR << "epoll_wait";
  }
  return now;
}

void EpollPoller::updateChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  const int state = channel->pollerState();
  if (state == kNew || state == kDetached) {
    if (channel->isNoneEvent()) {
      channel->setPollerState(kDetached);
      return;
    }
    control(EPOLL_CTL_ADD, channel);
    channel->setPollerState(kAdded);
  } else if (channel->isNoneEvent()) {
    control(EPOLL_CTL_DEL, channel);
    channel->setPollerState(kDetached);
  } else {
    control(EPOLL_CTL_MOD, channel);
  }
}

void EpollPoller::removeChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() == kAdded) control(EPOLL_CTL_DEL, channel);
  channel->setPollerState(kNew);
}

void EpollPoller::removeChannelBeforeClose(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  channel->setPollerState(kNew);
}

void EpollPoller::control(int op, Channel* channel) {
  struct epoll_event event {};
  event.events = channel->events() | EPOLLET;
  event.data.ptr = channel;
  if (::epoll_ctl(epollFd_.get(), op, channel->fd(), &event) < 0) {
    // ADD/MOD failing means a broken invariant (bad or duplicate fd); DEL of an
    // fd that was already closed elsewhere is only worth a log line.
    if (op == EPOLL_CTL_DEL) {
      LOG_SYSERR << "epoll_ctl DEL fd=" << channel->fd();
    } else {
      LOG_SYSFATAL << "epoll_ctl " << (op == EPOLL_CTL_ADD ? "ADD" : "MOD")
                   << " fd=" << channel->fd();
    }
  }
}

std::unique_ptr<ConnectionIo> EpollPoller::newConnectionIo(const ConnectionIo::Parts& parts) {
  return std::make_unique<EpollConnectionIo>(ownerLoop_, parts);
}

std::unique_ptr<AcceptorIo> EpollPoller::newAcceptorIo(AcceptorIo::Owner* owner, int listenFd) {
  return std::make_unique<EpollAcceptorIo>(ownerLoop_, owner, listenFd);
}

}  // namespace libnet
