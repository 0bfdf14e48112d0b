// Successor: starts a new copy of this program that takes over its listening
// sockets, for a restart (or an upgrade of the binary) that refuses no
// connection: the sockets stay open throughout, so connections arriving
// while the successor starts up wait in the same backlogs, and the
// successor accepts them once it serves. The old process then stops (a
// graceful drain, or at once: the application's choice, in its callback).
//
// The successor is a fork and exec of Options::program (/proc/self/exe: the
// binary this process runs) with the same arguments and environment, plus
// the socket-activation protocol of systemd (net/ListenFds.h): the listening
// fds are moved to 3, 4, ..., LISTEN_FDS says how many, LISTEN_PID is the
// successor's own pid (written in the child between fork and exec, with
// async-signal-safe code only: everything else is prepared before fork).
// No other fd reaches it (every fd above them is closed in the child, and
// every fd the library opens is close-on-exec anyway) but the write end of
// a readiness pipe, right after the sockets, whose number is in
// LIBNET_READY_FD: the successor calls notifyReady() once it serves,
// which writes "READY\n" to it. The signal mask is cleared for it.
//
// The parent waits for that on its loop (no blocking), at most
// Options::readyTimeout. The outcome is reported to the callback, from the
// loop's queue: ready (the successor is serving: stop this one), or not,
// with the reason (it could not be started, exited, or was not ready in
// time: then it is killed and reaped, and this process should keep
// serving). A successor that exits later is not this process's business:
// it is reparented when this one exits.
//
// Loop thread only: construct, start() and destroy it there. Destroying it
// while a start is pending kills that successor.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/Duration.h"

namespace libnet {

class EventLoop;

class Successor {
 public:
  struct Options {
    std::string program = "/proc/self/exe";
    std::vector<std::string> argv;  // argv[0] included
    Duration readyTimeout = std::chrono::seconds(10);
  };
  struct Outcome {
    bool ready = false;
    pid_t pid = -1;   // -1 if none was started
    std::string why;  // when not ready
  };
  using Callback = std::function<void(const Outcome&)>;

  explicit Successor(EventLoop* loop);
  ~Successor();
  Successor(const Successor&) = delete;
  Successor& operator=(const Successor&) = delete;

  // Starts a successor on `listeningFds` (borrowed: TcpServer::listeningFds()).
  // `done` runs once, from the loop's queue. False (and `done` not called)
  // while an earlier start is still pending.
  bool start(const std::vector<int>& listeningFds, const Options& options, Callback done);
  [[nodiscard]] bool pending() const { return attempt_ != nullptr; }

  // In the successor, once it serves: writes "READY\n" to LIBNET_READY_FD
  // and closes it (and removes the variable). False if there was none (not
  // started by a Successor: by systemd, say) or the write failed.
  static bool notifyReady();

 private:
  class Attempt;
  EventLoop* loop_;
  std::shared_ptr<Attempt> attempt_;
};

}  // namespace libnet
