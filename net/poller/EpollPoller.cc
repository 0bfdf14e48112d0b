#include "net/poller/EpollPoller.h"

#include <cerrno>
#include <system_error>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/EventLoopBase.h"

namespace libnet {

EpollPoller::EpollPoller(EventLoopBase* loop)
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
      const epoll_event& event = events_[static_cast<size_t>(i)];
      const auto slot = static_cast<uint32_t>(event.data.u64);
      const auto generation = static_cast<uint32_t>(event.data.u64 >> 32);
      // A registration left behind by an fd closed without EPOLL_CTL_DEL
      // whose socket lives on elsewhere (see EpollPoller.h): not ours.
      if (slot >= slots_.size() || slots_[slot].generation != generation) continue;
      Channel* channel = slots_[slot].channel;
      if (channel == nullptr) continue;
      channel->setReturnedEvents(event.events);
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
  if (channel->pollerState() < 0) {
    uint32_t slot;
    if (!freeSlots_.empty()) {
      slot = freeSlots_.back();
      freeSlots_.pop_back();
    } else {
      slot = static_cast<uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    slots_[slot].channel = channel;
    channel->setPollerState(static_cast<int>(slot));
  }
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  Slot& s = slots_[slot];
  if (!s.added) {
    if (channel->isNoneEvent()) return;
    control(EPOLL_CTL_ADD, channel, slot);
    s.added = true;
  } else if (channel->isNoneEvent()) {
    control(EPOLL_CTL_DEL, channel, slot);
    s.added = false;
  } else {
    control(EPOLL_CTL_MOD, channel, slot);
  }
}

void EpollPoller::removeChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() < 0) return;
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  if (slots_[slot].added) control(EPOLL_CTL_DEL, channel, slot);
  freeSlot(channel);
}

void EpollPoller::removeChannelBeforeClose(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() < 0) return;
  freeSlot(channel);
}

void EpollPoller::freeSlot(Channel* channel) {
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  Slot& s = slots_[slot];
  s.channel = nullptr;
  s.added = false;
  // Events of the old registration, already fetched or still to come (its
  // socket kept alive elsewhere), now read as stale.
  ++s.generation;
  freeSlots_.push_back(slot);
  channel->setPollerState(-1);
}

void EpollPoller::control(int op, Channel* channel, uint32_t slot) {
  struct epoll_event event {};
  event.events = channel->events() | EPOLLET;
  event.data.u64 = (static_cast<uint64_t>(slots_[slot].generation) << 32) | slot;
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

}  // namespace libnet
