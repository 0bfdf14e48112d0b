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
// Options::readyTimeout, and watches the child's exit through a pidfd. The
// outcome is reported to the callback, from the loop's queue: ready (the
// successor is serving: stop this one), or not, with the reason (it could
// not be started, exited, said something else, or was not ready in time),
// once it has exited and been reaped; this process should then keep
// serving.
//
// A successor shares the listening sockets from its first instant: one that
// is not ready may already have accepted connections. So it is never
// SIGKILLed first: one that still runs when it is found not to be ready is
// sent SIGTERM (a libnet server drains on it, answering what it took), and
// SIGKILL only if it still runs Options::stopGrace later. Destroying the
// Successor while a start is pending sends that successor SIGTERM (logged)
// and waits for nothing.
//
// A ready successor stays this object's business while it lives: signal()
// reaches it (through its pidfd, so never a process that reused its pid),
// and watchExit() reports its end (it is reaped here). Once this process
// exits it is reparented.
//
// Loop thread only: construct, start(), signal(), watchExit() and destroy it
// there.
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
    // A successor that is not to serve but still runs: SIGTERM, then SIGKILL
    // if it has not exited this much later.
    Duration stopGrace = std::chrono::seconds(10);
  };
  struct Outcome {
    bool ready = false;
    pid_t pid = -1;   // -1 if none was started
    std::string why;  // when not ready: the reason, then how it ended
  };
  using Callback = std::function<void(const Outcome&)>;
  // How a successor ended: "exited with status 0", "killed by signal 15".
  using ExitCallback = std::function<void(pid_t pid, const std::string& status)>;

  explicit Successor(EventLoop* loop);
  ~Successor();
  Successor(const Successor&) = delete;
  Successor& operator=(const Successor&) = delete;

  // Starts a successor on `listeningFds` (borrowed: TcpServer::listeningFds()).
  // `done` runs once, from the loop's queue. False (and `done` not called)
  // while an earlier start is still pending.
  bool start(const std::vector<int>& listeningFds, const Options& options, Callback done);
  // Started, and its outcome not reported yet.
  [[nodiscard]] bool pending() const;
  // The successor started last, until it has been seen to exit: its pid;
  // -1 when there is none.
  [[nodiscard]] pid_t pid() const;
  // Sends `signo` to that successor. False when there is none, or the
  // kill failed (it has just exited).
  bool signal(int signo);
  // `exited` runs once, from the loop's queue, when that successor has
  // exited (and has been reaped here); at once (queued, pid -1, "not
  // running") when there is none. Replaces an earlier one not run yet.
  void watchExit(ExitCallback exited);

  // In the successor, once it serves: writes "READY\n" to LIBNET_READY_FD
  // and closes it (and removes the variable). False if there was none (not
  // started by a Successor: by systemd, say) or the write failed.
  static bool notifyReady();

 private:
  class Child;
  EventLoop* loop_;
  std::shared_ptr<Child> child_;
};

}  // namespace libnet
