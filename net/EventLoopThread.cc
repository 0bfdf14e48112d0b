#include "net/EventLoopThread.h"

#include <pthread.h>

#include <string>
#include <system_error>

#include "base/CpuAffinity.h"
#include "base/Logging.h"
#include "base/Mutex.h"
#include "base/SignalMask.h"
#include "base/ThreadAnnotations.h"
#include "net/EventLoop.h"

namespace libnet {

EventLoopThread::EventLoopThread(ThreadInitCallback cb, std::string name, PollerKind kind)
    : EventLoopThread(std::move(cb), std::move(name),
                      EventLoopOptions{.poller = kind, .ioUring = {}}) {}

EventLoopThread::EventLoopThread(ThreadInitCallback cb, std::string name,
                                 const EventLoopOptions& options, std::optional<int> cpu)
    : callback_(std::move(cb)), name_(std::move(name)), options_(options), cpu_(cpu) {}

EventLoopThread::~EventLoopThread() {
  {
    // Under the lock: the thread clears loop_ under it before its loop dies.
    MutexLock lock(mutex_);
    if (loop_) loop_->quit();
  }
  if (thread_.joinable()) thread_.join();
}

EventLoop* EventLoopThread::startLoop() {
  {
    // The loop thread never takes a process signal (base/SignalMask.h).
    BlockAsyncSignals blocked;
    thread_ = std::thread([this] { threadFunc(); });
  }
  MutexLock lock(mutex_);
  lock.wait(cond_, [this]() LIBNET_REQUIRES(mutex_) { return started_; });
  if (startError_) std::rethrow_exception(startError_);
  return loop_;
}

void EventLoopThread::pin(int cpu) const {
  try {
    pinCurrentThread(cpu);
  } catch (const std::system_error& e) {
    // No silent fallback: a loop that runs elsewhere than asked is a
    // configuration error the caller must see.
    throw std::system_error(e.code(), "EventLoopThread " + (name_.empty() ? "(unnamed)" : name_) +
                                          ": pthread_setaffinity_np to CPU " + std::to_string(cpu));
  }
}

void EventLoopThread::threadFunc() {
  if (!name_.empty()) {
    // Linux limits thread names to 15 characters.
    ::pthread_setname_np(::pthread_self(), name_.substr(0, 15).c_str());
  }
  try {
    if (cpu_) pin(*cpu_);
    EventLoop loop(options_);
    if (callback_) callback_(&loop);
    {
      MutexLock lock(mutex_);
      loop_ = &loop;
      started_ = true;
    }
    cond_.notify_one();
    loop.loop();
    MutexLock lock(mutex_);
    loop_ = nullptr;
  } catch (...) {
    MutexLock lock(mutex_);
    if (!started_) {
      startError_ = std::current_exception();
      started_ = true;
      cond_.notify_one();
    } else {
      LOG_ERROR << "EventLoopThread " << name_ << " ended by an exception";
    }
  }
}

}  // namespace libnet
