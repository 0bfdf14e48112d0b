// WriterGate: how a ResponseWriter held by any thread reaches its
// connection's loop without outliving it. A server makes one and shares it
// with every writer it hands out; its destructor closes the gate before its
// I/O loops are destroyed. A call through an open gate reaches the loop (at
// once on the loop's own thread, else through its queue); once the gate is
// closed it does nothing, so a writer kept by a worker thread after the
// server is gone never touches a destroyed loop.
//
// The lock is held while a call is queued, so that close() cannot return
// (and the loops go) between the check and queueInLoop(). Only the loop's
// queue and thread are used (EventLoopBase). Any thread.
#pragma once

#include "base/InlineFunction.h"
#include "base/Mutex.h"

namespace libnet {
class EventLoopBase;
}

namespace libnet::http {

class WriterGate {
 public:
  WriterGate() = default;
  WriterGate(const WriterGate&) = delete;
  WriterGate& operator=(const WriterGate&) = delete;

  // Runs `fn` on `loop`: now when called on its thread, else queued. False
  // (and `fn` dropped) once closed.
  bool run(EventLoopBase* loop, InlineFunction fn);
  // Always through the loop's queue, even on its thread: for a caller that
  // must not re-enter what is running (a destructor).
  bool queue(EventLoopBase* loop, InlineFunction fn);
  // From now on every call does nothing. Idempotent.
  void close();
  [[nodiscard]] bool open() const;

 private:
  mutable Mutex mutex_;
  bool open_ LIBNET_GUARDED_BY(mutex_) = true;
};

}  // namespace libnet::http
