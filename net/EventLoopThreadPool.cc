#include "net/EventLoopThreadPool.h"

#include <optional>
#include <stdexcept>
#include <string>

#include "base/CpuAffinity.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"

namespace libnet {

EventLoopThreadPool::EventLoopThreadPool(EventLoop* baseLoop, std::string name, int numThreads,
                                         std::vector<int> cpus)
    : baseLoop_(baseLoop), name_(std::move(name)), numThreads_(numThreads), cpus_(std::move(cpus)) {
  if (numThreads_ < 0) {
    throw std::invalid_argument("EventLoopThreadPool: negative thread count " +
                                std::to_string(numThreads_));
  }
  if (cpus_.empty()) return;
  if (numThreads_ == 0) {
    throw std::invalid_argument(
        "EventLoopThreadPool: CPUs given but no loop thread to pin (the base loop is the "
        "caller's thread: pinCurrentThread() pins it)");
  }
  checkCpus("EventLoopThreadPool", cpus_);
}

// Threads are joined here; each loop runs what was queued to it before quitting.
EventLoopThreadPool::~EventLoopThreadPool() = default;

void EventLoopThreadPool::start(const ThreadInitCallback& cb) {
  baseLoop_->assertInLoopThread();
  if (started_) return;
  started_ = true;
  for (int i = 0; i < numThreads_; ++i) {
    std::optional<int> cpu;
    if (!cpus_.empty()) cpu = cpus_[static_cast<size_t>(i) % cpus_.size()];
    auto thread =
        std::make_unique<EventLoopThread>(cb, name_ + std::to_string(i), baseLoop_->options(), cpu);
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
