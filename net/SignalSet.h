// SignalSet: delivers some signals to an EventLoop, as ordinary loop work
// rather than inside an asynchronous signal handler. The constructor blocks
// the signals in the calling thread (pthread_sigmask) and reads them from a
// signalfd registered as a Channel on the loop, so it works on both backends.
//
//   EventLoop loop;
//   SignalSet stop(&loop, {SIGINT, SIGTERM}, [&loop](int) { loop.quit(); });
//
// A signal sent to the process is taken by a thread that does not block it.
// The library's own threads block every asynchronous signal
// (base/SignalMask.h), so with the set made on the main thread and no thread
// of the application's leaving the signals unblocked, every one of them
// reaches the set, whether it was made before or after a thread pool
// started. A signal sent to one thread (raise(), pthread_kill()) is seen only
// by a set whose loop runs on that thread.
//
// Each delivered signal runs the callback (if any) on the loop thread, once
// per signal read; the kernel merges a standard signal sent again while it
// is still pending into one. Then the signal goes to every coroutine
// suspended in co_await coro::nextSignal(set) at that moment
// (net/coro/Signal.h); if none is, it is kept for the next co_await, at most
// once per signal number (as the kernel keeps a pending signal), so a
// signal arriving before the co_await is not lost. A set with a callback
// keeps them too: its callback sees every signal, its awaiters the ones
// they waited for or the ones kept since.
//
// Destroying the set closes the signalfd and resumes its awaiters with
// Errc::kClosed; the signals stay blocked in the thread that made it (a
// signal arriving later stays pending rather than killing the process, and
// a new set for it takes it). The callback may destroy the set.
//
// Loop thread only: construct, use and destroy it on the loop's thread, and
// destroy it before the loop. Throws std::invalid_argument for no signals, a
// number that is not a signal, SIGKILL and SIGSTOP (which cannot be caught),
// the synchronous signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT,
// SIGSYS: raised by a fault in the thread itself, they cannot wait for the
// loop) and the C library's internal ones; std::system_error if
// pthread_sigmask or signalfd fails.
#pragma once

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Channel.h"

namespace libnet {

class EventLoop;

class SignalSet {
 public:
  using Callback = std::function<void(int signo)>;

  // Given at construction, as the set reads from then on: a setter would
  // need a "before the first signal" rule.
  SignalSet(EventLoop* loop, const std::vector<int>& signals, Callback callback = {});
  ~SignalSet();
  SignalSet(const SignalSet&) = delete;
  SignalSet& operator=(const SignalSet&) = delete;

  [[nodiscard]] EventLoop* loop() const { return loop_; }
  [[nodiscard]] bool contains(int signo) const;

  // For awaitables built on the set (net/coro/Signal.h). A waiter is told of
  // the next signal, or that the set is gone, exactly once, after which it is
  // no longer registered. Either call may destroy the waiter, resume a
  // coroutine, destroy the set.
  class Waiter {
   public:
    virtual void signalled(int signo) = 0;
    virtual void setClosed() = 0;

   protected:
    ~Waiter() = default;
  };
  // A signal kept for the next awaiter, oldest first, removed from the set.
  [[nodiscard]] std::optional<int> takePending();
  // False, registering nothing, if the set is being destroyed (the waiter
  // then ends as closed).
  [[nodiscard]] bool addWaiter(Waiter* waiter);
  // No-op if `waiter` is not registered.
  void removeWaiter(Waiter* waiter);

 private:
  struct Core;
  void handleRead();

  EventLoop* loop_;
  sigset_t signals_;
  // What a dispatch queued on the loop needs, shared with it: the callback
  // may destroy this object while the dispatch still runs.
  std::shared_ptr<Core> core_;
  UniqueFd fd_;
  Channel channel_;
};

}  // namespace libnet
