// EventLoopBase: the part of an EventLoop that the pieces below it use:
// Channels register through it, the TimerQueue queues through it, and the
// backends' I/O strategies (net/poller/) find the loop's thread, scratch
// buffer, buffer pool and poll time in it. EventLoop derives from it and adds
// what needs a backend chosen (construction picks one) and the loop itself.
// With this split the targets read one way: //net:core (this, Channel, the
// Poller interface) <- //net/poller (the backends) <- //net (EventLoop,
// TcpServer, ...); see docs/architecture.md, "Targets".
//
// Thread rules as for EventLoop: isInLoopThread(), queueInLoop() and
// runInLoop() from any thread; everything else on the loop's thread.
#pragma once

#include <sys/types.h>

#include <memory>

#include "base/InlineFunction.h"
#include "base/Timestamp.h"

namespace libnet {

class Buffer;
class BufferPool;
class Channel;
class Poller;

class EventLoopBase {
 public:
  // Move-only; a small callable (a shared_ptr and a few words of capture)
  // is queued without an allocation (see InlineFunction).
  using Functor = InlineFunction;

  EventLoopBase(const EventLoopBase&) = delete;
  EventLoopBase& operator=(const EventLoopBase&) = delete;

  // Runs `cb` now if called on the loop thread, else queues it.
  void runInLoop(Functor cb) {
    if (isInLoopThread()) {
      cb();
    } else {
      queueInLoop(std::move(cb));
    }
  }
  // Queues `cb` to run on the loop thread after the current batch of events.
  // Functors queued from one thread run in the order they were queued.
  virtual void queueInLoop(Functor cb) = 0;

  [[nodiscard]] bool isInLoopThread() const;
  void assertInLoopThread() const {
    if (!isInLoopThread()) abortNotInLoopThread();
  }
  [[nodiscard]] pid_t threadId() const { return threadId_; }

  // Loop thread only (used by Channel).
  void updateChannel(Channel* channel);
  void removeChannel(Channel* channel);
  void removeChannelBeforeClose(Channel* channel);

  // When the current batch of events was polled.
  [[nodiscard]] Timestamp pollReturnTime() const { return pollReturnTime_; }

 protected:
  // The backend, scratch buffer and buffer pool are the library's own
  // (net/LoopInternals.h).
  friend struct LoopInternals;

  // On the thread that will own the loop.
  EventLoopBase();
  ~EventLoopBase();

  [[noreturn]] void abortNotInLoopThread() const;

  const pid_t threadId_;
  Timestamp pollReturnTime_;
  std::unique_ptr<Buffer> scratch_;
  std::unique_ptr<BufferPool> bufferPool_;
  std::unique_ptr<Poller> poller_;  // set by EventLoop's constructor
};

}  // namespace libnet
