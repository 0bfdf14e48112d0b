#include "net/inspect/LoopGather.h"

#include <memory>
#include <utility>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "net/EventLoop.h"
#include "net/TimerId.h"

namespace libnet::inspect {

namespace {

// Shared by the loops' functors and the deadline's timer: whichever makes
// it complete first calls `done`.
struct Gathering {
  Gathering(LoopGather::Read r, LoopGather::Done d, size_t loops)
      : read(std::move(r)), pieces(loops), left(loops), done(std::move(d)) {}

  const LoopGather::Read read;
  EventLoop* timerLoop = nullptr;
  Mutex mutex;
  std::vector<std::optional<std::string>> pieces LIBNET_GUARDED_BY(mutex);
  size_t left LIBNET_GUARDED_BY(mutex);
  LoopGather::Done done LIBNET_GUARDED_BY(mutex);  // empty once called
  TimerId deadline LIBNET_GUARDED_BY(mutex);
};

// Calls `done` unless it was called; outside the lock (it may take long:
// it formats the answer).
void finish(const std::shared_ptr<Gathering>& g) {
  LoopGather::Done done;
  std::vector<std::optional<std::string>> pieces;
  TimerId deadline;
  {
    MutexLock lock(g->mutex);
    if (!g->done) return;
    done = std::move(g->done);
    g->done = nullptr;
    pieces = std::move(g->pieces);
    deadline = g->deadline;
  }
  // Harmless when it is the deadline that is running.
  if (deadline.valid()) g->timerLoop->cancel(deadline);
  done(std::move(pieces));
}

void answer(const std::shared_ptr<Gathering>& g, size_t index) {
  std::string piece = g->read(index);
  {
    MutexLock lock(g->mutex);
    if (!g->done) return;  // past the deadline
    g->pieces[index] = std::move(piece);
    if (--g->left > 0) return;
  }
  finish(g);
}

}  // namespace

void LoopGather::start(const std::vector<EventLoop*>& loops, Read read, EventLoop* timerLoop,
                       Duration deadline, Done done) {
  if (loops.empty()) {
    done({});
    return;
  }
  auto g = std::make_shared<Gathering>(std::move(read), std::move(done), loops.size());
  g->timerLoop = timerLoop;
  const TimerId timer = timerLoop->runAfter(deadline, [g] { finish(g); });
  {
    MutexLock lock(g->mutex);
    g->deadline = timer;
  }
  // queueInLoop, not runInLoop: on its own loop the asking functor is not
  // run inside the caller (who may hold state the answer reads).
  for (size_t i = 0; i < loops.size(); ++i) {
    loops[i]->queueInLoop([g, i] { answer(g, i); });
  }
}

}  // namespace libnet::inspect
