// EventLoopThreadPool: N loop threads for a TcpServer's connections (the
// server gives each loop a listening socket of its own, or hands connections
// over round-robin: TcpServer::Options::acceptMode); nextLoop() picks one
// round-robin for other users. With 0 threads everything runs on the base
// loop. Created, started and used on the base loop's thread.
//
// CPU pinning (`cpus`): loop thread i runs on cpus[i % cpus.size()], pinned
// on its own thread before its loop is built. The base loop is the caller's
// thread and is left alone: a caller that wants it pinned too calls
// pinCurrentThread() (base/CpuAffinity.h) itself, best after start(), since
// threads inherit their creator's mask.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/Callbacks.h"
#include "net/PollerKind.h"

namespace libnet {

class EventLoop;
class EventLoopThread;

class EventLoopThreadPool {
 public:
  // `numThreads` loop threads (0: everything on the base loop); throws
  // std::invalid_argument for a negative count, and for `cpus` (empty: no
  // pinning) that checkCpus() refuses or that come without a thread to pin.
  EventLoopThreadPool(EventLoop* baseLoop, std::string name, int numThreads = 0,
                      std::vector<int> cpus = {});
  ~EventLoopThreadPool();
  EventLoopThreadPool(const EventLoopThreadPool&) = delete;
  EventLoopThreadPool& operator=(const EventLoopThreadPool&) = delete;

  // The pool's loops get the base loop's options (EventLoop::options()), so
  // they ask for the backend it asked for: the same explicit kind, or kAuto,
  // under which a loop whose io_uring ring cannot be built (RLIMIT_MEMLOCK)
  // runs on epoll instead of failing the start.
  // Throws what a loop's construction threw (an explicit kIoUring that
  // cannot be had), or std::system_error naming the loop and the CPU when a
  // thread cannot be pinned (the CPU went offline since the check).
  void start(const ThreadInitCallback& cb = {});

  // Round-robin; the base loop when the pool has no threads.
  EventLoop* nextLoop();
  [[nodiscard]] std::vector<EventLoop*> allLoops() const;
  [[nodiscard]] bool started() const { return started_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  // What the constructor was given (empty: no pinning).
  [[nodiscard]] const std::vector<int>& cpus() const { return cpus_; }

  // The names of 0.1, kept for one minor version (CHANGELOG.md).
  [[deprecated("use nextLoop()")]] EventLoop* getNextLoop() { return nextLoop(); }
  [[deprecated("use allLoops()")]] [[nodiscard]] std::vector<EventLoop*> getAllLoops() const {
    return allLoops();
  }

 private:
  EventLoop* baseLoop_;
  std::string name_;
  bool started_ = false;
  const int numThreads_;
  const std::vector<int> cpus_;
  size_t next_ = 0;
  std::vector<std::unique_ptr<EventLoopThread>> threads_;
  std::vector<EventLoop*> loops_;
};

}  // namespace libnet
