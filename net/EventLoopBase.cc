#include "net/EventLoopBase.h"

#include <cstdlib>

#include "base/CurrentThread.h"
#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/Poller.h"

namespace libnet {

EventLoopBase::EventLoopBase()
    : threadId_(CurrentThread::tid()),
      scratch_(std::make_unique<Buffer>(Buffer::kExtraReadSize)),
      bufferPool_(std::make_unique<BufferPool>()) {}

EventLoopBase::~EventLoopBase() = default;

bool EventLoopBase::isInLoopThread() const { return threadId_ == CurrentThread::tid(); }

void EventLoopBase::abortNotInLoopThread() const {
  LOG_FATAL << "EventLoop " << this << " belongs to thread " << threadId_
            << " but was used from thread " << CurrentThread::tid();
  std::abort();
}

void EventLoopBase::updateChannel(Channel* channel) {
  assertInLoopThread();
  poller_->updateChannel(channel);
}

void EventLoopBase::removeChannel(Channel* channel) {
  assertInLoopThread();
  poller_->removeChannel(channel);
}

void EventLoopBase::removeChannelBeforeClose(Channel* channel) {
  assertInLoopThread();
  poller_->removeChannelBeforeClose(channel);
}

}  // namespace libnet
