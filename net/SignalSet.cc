#include "net/SignalSet.h"

#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "base/Logging.h"
#include "base/SignalMask.h"
#include "net/EventLoop.h"

namespace libnet {

namespace {

std::string signalName(int signo) {
  const char* abbrev = ::sigabbrev_np(signo);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

sigset_t checkedSignals(const std::vector<int>& signals) {
  if (signals.empty()) throw std::invalid_argument("SignalSet: no signals given");
  sigset_t set;
  ::sigemptyset(&set);
  for (const int signo : signals) {
    if (signo == SIGKILL || signo == SIGSTOP) {
      throw std::invalid_argument("SignalSet: " + signalName(signo) + " cannot be caught");
    }
    if (isSynchronousSignal(signo)) {
      throw std::invalid_argument("SignalSet: " + signalName(signo) +
                                  " is raised by a fault in the thread itself and cannot wait "
                                  "for a loop");
    }
    // glibc refuses its internal signals here too (they can never be blocked).
    if (::sigaddset(&set, signo) != 0) {
      throw std::invalid_argument("SignalSet: " + std::to_string(signo) +
                                  " is not a signal an application can take");
    }
  }
  return set;
}

EventLoop* checkedLoop(EventLoop* loop) {
  loop->assertInLoopThread();
  return loop;
}

// Blocks `set` in this thread, then opens the signalfd; on failure the mask
// is as it was.
int blockAndOpen(const sigset_t& set) {
  sigset_t saved;
  if (const int err = ::pthread_sigmask(SIG_BLOCK, &set, &saved); err != 0) {
    throw std::system_error(err, std::system_category(), "pthread_sigmask");
  }
  const int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    throw std::system_error(err, std::system_category(), "signalfd");
  }
  return fd;
}

}  // namespace

struct SignalSet::Core {
  struct Registered {
    Waiter* waiter;
    uint64_t seq;  // registration order: a dispatch wakes only earlier ones
  };

  explicit Core(Callback cb) : callback(std::move(cb)) {}

  void dispatch();
  void deliver(int signo);

  Callback callback;
  std::vector<int> arrived;  // read, not yet dispatched
  std::vector<int> pending;  // kept for the next awaiter, each number once
  std::deque<Registered> waiters;
  uint64_t nextSeq = 0;
  bool dispatchQueued = false;
  bool closed = false;  // the SignalSet is gone or going
};

// Runs from the loop's queue, never inside the Channel's handling, so that
// the callback or a resumed coroutine may destroy the set (and its Channel).
void SignalSet::Core::dispatch() {
  dispatchQueued = false;
  std::vector<int> batch;
  batch.swap(arrived);
  for (const int signo : batch) {
    if (closed) return;
    if (callback) callback(signo);
    if (closed) return;
    deliver(signo);
  }
}

void SignalSet::Core::deliver(int signo) {
  // A coroutine resumed here that awaits again registers after `limit`: it
  // waits for the next signal, not this one again.
  const uint64_t limit = nextSeq;
  bool delivered = false;
  while (!closed && !waiters.empty() && waiters.front().seq < limit) {
    Waiter* waiter = waiters.front().waiter;
    waiters.pop_front();
    delivered = true;
    waiter->signalled(signo);
  }
  if (!delivered && !closed && std::find(pending.begin(), pending.end(), signo) == pending.end()) {
    pending.push_back(signo);
  }
}

SignalSet::SignalSet(EventLoop* loop, const std::vector<int>& signals, Callback callback)
    : loop_(checkedLoop(loop)),
      signals_(checkedSignals(signals)),
      core_(std::make_shared<Core>(std::move(callback))),
      fd_(blockAndOpen(signals_)),
      channel_(loop, fd_.get()) {
  channel_.setReadCallback([this](Timestamp) { handleRead(); });
  channel_.enableReading();
}

SignalSet::~SignalSet() {
  loop_->assertInLoopThread();
  channel_.disableAll();
  channel_.remove();
  core_->closed = true;
  // One at a time: a coroutine resumed here may destroy another waiter.
  while (!core_->waiters.empty()) {
    Waiter* waiter = core_->waiters.front().waiter;
    core_->waiters.pop_front();
    waiter->setClosed();
  }
}

bool SignalSet::contains(int signo) const { return ::sigismember(&signals_, signo) == 1; }

std::optional<int> SignalSet::takePending() {
  loop_->assertInLoopThread();
  if (core_->pending.empty()) return std::nullopt;
  const int signo = core_->pending.front();
  core_->pending.erase(core_->pending.begin());
  return signo;
}

bool SignalSet::addWaiter(Waiter* waiter) {
  loop_->assertInLoopThread();
  if (core_->closed) return false;
  core_->waiters.push_back({waiter, core_->nextSeq++});
  return true;
}

void SignalSet::removeWaiter(Waiter* waiter) {
  auto& waiters = core_->waiters;
  const auto it = std::find_if(waiters.begin(), waiters.end(),
                               [waiter](const Core::Registered& r) { return r.waiter == waiter; });
  if (it != waiters.end()) waiters.erase(it);
}

void SignalSet::handleRead() {
  // Edge-triggered: read every queued signal now.
  signalfd_siginfo infos[16];
  for (;;) {
    const ssize_t n = ::read(fd_.get(), infos, sizeof infos);
    if (n > 0) {
      for (size_t i = 0; i < static_cast<size_t>(n) / sizeof infos[0]; ++i) {
        core_->arrived.push_back(static_cast<int>(infos[i].ssi_signo));
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) LOG_SYSERR << "read signalfd";
    break;
  }
  if (core_->arrived.empty() || core_->dispatchQueued) return;
  core_->dispatchQueued = true;
  loop_->queueInLoop([weak = std::weak_ptr<Core>(core_)] {
    if (const std::shared_ptr<Core> core = weak.lock()) core->dispatch();
  });
}

}  // namespace libnet
