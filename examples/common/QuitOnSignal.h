// QuitOnSignal: makes SIGINT and SIGTERM quit an EventLoop cleanly, through a
// signalfd read on that loop (so the shutdown runs as an ordinary loop
// callback, not inside an async signal handler).
//
// blockStopSignals() must run before any thread is started, so that every
// thread inherits the mask and the signals stay pending for the signalfd
// instead of killing the process. Construct and destroy the watcher on the
// loop's thread; destroy it before the loop.
#pragma once

#include <functional>

#include "base/UniqueFd.h"
#include "net/Channel.h"

namespace libnet {

class EventLoop;

class QuitOnSignal {
 public:
  // Throws std::system_error if the signals cannot be blocked.
  static void blockStopSignals();

  // Throws std::system_error if the signalfd cannot be created. On a stop
  // signal it runs `onSignal` on the loop (once per batch of signals), or
  // quits the loop if none is given.
  explicit QuitOnSignal(EventLoop* loop, std::function<void()> onSignal = {});
  ~QuitOnSignal();
  QuitOnSignal(const QuitOnSignal&) = delete;
  QuitOnSignal& operator=(const QuitOnSignal&) = delete;

 private:
  void handleRead();

  EventLoop* loop_;
  std::function<void()> onSignal_;
  UniqueFd signalFd_;
  Channel channel_;
};

}  // namespace libnet
