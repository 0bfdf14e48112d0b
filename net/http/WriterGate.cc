#include "net/http/WriterGate.h"

#include <utility>

#include "net/EventLoopBase.h"

namespace libnet::http {

bool WriterGate::run(EventLoopBase* loop, InlineFunction fn) {
  bool here = false;
  {
    MutexLock lock(mutex_);
    if (!open_) return false;
    // Asked under the lock: the loop exists while the gate is open.
    here = loop->isInLoopThread();
    if (!here) loop->queueInLoop(std::move(fn));
  }
  // Outside the lock: `fn` may call back into a writer, and so this gate.
  if (here) fn();
  return true;
}

bool WriterGate::queue(EventLoopBase* loop, InlineFunction fn) {
  MutexLock lock(mutex_);
  if (!open_) return false;
  loop->queueInLoop(std::move(fn));
  return true;
}

void WriterGate::close() {
  MutexLock lock(mutex_);
  open_ = false;
}

bool WriterGate::open() const {
  MutexLock lock(mutex_);
  return open_;
}

}  // namespace libnet::http
