#include "net/EventLoopThreadPool.h"

#include <stdexcept>
#include <string>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"

namespace libnet {

EventLoopThreadPool::EventLoopThreadPool(EventLoop* baseLoop, std::string name, int numThreads)
    : baseLoop_(baseLoop), name_(std::move(name)), numThreads_(numThreads) {
  if (numThreads_ < 0) {
    throw std::invalid_argument("EventLoopThreadPool: negative thread count " +
                                std::to_string(numThreads_));
  }
}

// Threads are joined here; each loop runs what was queued to it before quitting.
EventLoopThreadPool::~EventLoopThreadPool() = default;

void EventLoopThreadPool::start(const ThreadInitCallback& cb) {
  baseLoop_->assertInLoopThread();
  if (started_) return;
  started_ = true;
  for (int i = 0; i < numThreads_; ++i) {
    auto thread =
        std::make_unique<EventLoopThread>(cb, name_ + std::to_string(i), baseLoop_->options());
    loops_.push_back(thread->startLoop());
    threads_.push_back(std::move(thread));
  }
  if (numThreads_ == 0 && cb) cb(baseLoop_);
}

EventLoop* EventLoopThreadPool::nextLoop() {
  baseLoop_->assertInLoopThread();
  if (loops_.empty()) return baseLoop_;
  EventLoop* loop = loops_[next_];
  next_ = (next_ + 1) % loops_.size();
  return loop;
}

std::vector<EventLoop*> EventLoopThreadPool::allLoops() const {
  if (loops_.empty()) return {baseLoop_};
  return loops_;
}

}  // namespace libnet
