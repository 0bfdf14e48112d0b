#include "net/Channel.h"

#include <sys/epoll.h>

#include <cassert>

#include "base/Logging.h"
#include "net/EventLoopBase.h"

namespace libnet {

const uint32_t Channel::kReadEvent = EPOLLIN | EPOLLPRI | EPOLLRDHUP;
const uint32_t Channel::kWriteEvent = EPOLLOUT;

Channel::Channel(EventLoopBase* loop, int fd) : loop_(loop), fd_(fd) {}

Channel::~Channel() {
  if (registered_) {
    LOG_FATAL << "Channel for fd " << fd_ << " destroyed while still registered with its poller";
  }
  assert(!eventHandling_);
}

void Channel::tie(const std::shared_ptr<void>& owner) {
  tie_ = owner;
  tied_ = true;
}

void Channel::setInterest(uint32_t events) {
  events_ = events;
  registered_ = true;
  loop_->updateChannel(this);
}

void Channel::remove() {
  assert(isNoneEvent());
  if (registered_) {
    loop_->removeChannel(this);
    registered_ = false;
  }
}

void Channel::removeBeforeClose() {
  events_ = kNoneEvent;
  if (registered_) {
    loop_->removeChannelBeforeClose(this);
    registered_ = false;
  }
}

void Channel::handleEvent(Timestamp receiveTime) {
  if (tied_) {
    std::shared_ptr<void> guard = tie_.lock();
    if (guard) handleEventWithGuard(receiveTime);
  } else {
    handleEventWithGuard(receiveTime);
  }
}

void Channel::handleEventWithGuard(Timestamp receiveTime) {
  // Cleared even if a callback throws (the loop catches and carries on).
  struct HandlingScope {
    bool& flag;
    explicit HandlingScope(bool& f) : flag(f) { flag = true; }
    ~HandlingScope() { flag = false; }
  } scope(eventHandling_);
  // A hang-up with nothing left to read: the peer is gone in both directions.
  if ((revents_ & EPOLLHUP) && !(revents_ & EPOLLIN)) {
    if (closeCallback_) closeCallback_();
  }
  if (revents_ & EPOLLERR) {
    if (errorCallback_) errorCallback_();
  }
  if (revents_ & (EPOLLIN | EPOLLPRI | EPOLLRDHUP)) {
    if (readCallback_) readCallback_(receiveTime);
  }
  if (revents_ & EPOLLOUT) {
    if (writeCallback_) writeCallback_();
  }
}

}  // namespace libnet
