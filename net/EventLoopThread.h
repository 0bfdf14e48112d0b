// EventLoopThread: a thread running one EventLoop. startLoop() starts the
// thread and returns its loop once it is constructed; the destructor quits the
// loop and joins the thread. The loop object lives on the thread's own stack,
// so it is created and destroyed on its own thread. Given a CPU, the thread
// pins itself to it (base/CpuAffinity.h) before it builds its loop, so the
// loop's memory (its ring, its buffers) is first touched there too.
// startLoop() and the destructor are called from the owning thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "net/Callbacks.h"
#include "net/EventLoopOptions.h"
#include "net/PollerKind.h"

namespace libnet {

class EventLoop;

class EventLoopThread {
 public:
  explicit EventLoopThread(ThreadInitCallback cb = {}, std::string name = {},
                           PollerKind kind = PollerKind::kAuto);
  // The thread's loop is built with `options`, on `cpu` when one is given
  // (unchecked here: a CPU the kernel refuses fails startLoop()).
  EventLoopThread(ThreadInitCallback cb, std::string name, const EventLoopOptions& options,
                  std::optional<int> cpu = std::nullopt);
  ~EventLoopThread();
  EventLoopThread(const EventLoopThread&) = delete;
  EventLoopThread& operator=(const EventLoopThread&) = delete;

  // Throws std::system_error if the loop could not be created on the thread,
  // or if the thread could not be pinned to its CPU (the message names the
  // thread and the CPU).
  EventLoop* startLoop();

 private:
  void threadFunc();
  // On the thread: pins it to `cpu`, or throws std::system_error naming both.
  void pin(int cpu) const;

  ThreadInitCallback callback_;
  std::string name_;
  const EventLoopOptions options_;
  const std::optional<int> cpu_;
  std::thread thread_;
  Mutex mutex_;
  std::condition_variable cond_;
  EventLoop* loop_ LIBNET_GUARDED_BY(mutex_) = nullptr;
  std::exception_ptr startError_ LIBNET_GUARDED_BY(mutex_);
  bool started_ LIBNET_GUARDED_BY(mutex_) = false;
};

}  // namespace libnet
