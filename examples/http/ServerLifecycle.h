// ServerLifecycle: what SIGINT, SIGTERM and SIGHUP mean to an example server
// (http_server, coro_http_server) at each point of its life, as one state
// machine on the main loop; docs/operations.md has the table.
//
//   kStarting ── serving() ──> kServing ── SIGTERM ──> kStopping ── drained ──> exit
//                                 │  ^
//                          SIGHUP │  │ the successor failed (it was stopped)
//                                 v  │
//                             kRestarting ── successor ready ──> kHandingOver ── drained ──> exit
//                                 │                                  │
//                                 └──── SIGTERM ──> kStoppingBoth <── SIGTERM
//                                                        │
//                       drained, and the successor has exited ──> exit
//
// - SIGTERM and SIGINT are the operator's: the first drains (--drain-timeout,
//   never less); a second closes what is left at once. Only they count: a
//   successor's readiness starts this process's drain but is no signal.
// - A restart lasts from SIGHUP until this process exits. A SIGTERM within it
//   stops both generations gracefully: this process drains as on any SIGTERM;
//   the successor is sent SIGTERM once it has reported ready (at once if it
//   already has), so that it drains too; this process exits once it has
//   drained and the successor has exited (it is reaped and its status
//   printed). A successor is never killed for being late: it may already
//   have accepted connections from the shared sockets (net/Successor.h).
//   A second SIGTERM forces this process, and is passed on to the successor
//   (forcing it too, or telling it now if it was not ready yet).
// - SIGHUP restarts only from kServing; anywhere else it is ignored (a line
//   says so).
// - SIGUSR1, in any state, starts a CPU profile to
//   Options::profileDir/NAME-PID-N.prof, and the next one stops it
//   (net/inspect/ProfileSignal.h; logged at INFO with the file's path).
//
// Every line it prints starts with Options::name. Loop thread only; made
// before the server's threads start, so that a signal from then on is
// handled (kStarting: a stop signal just ends the loop).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/Duration.h"
#include "net/SignalSet.h"
#include "net/Successor.h"
#include "net/TimerId.h"
#include "net/inspect/ProfileSignal.h"

namespace libnet {

class EventLoop;

class ServerLifecycle {
 public:
  enum class State { kStarting, kServing, kRestarting, kHandingOver, kStopping, kStoppingBoth };

  struct Options {
    std::string name;               // "http_server"
    std::vector<std::string> argv;  // the successor's command line (argv[0] included)
    Duration drainTimeout = std::chrono::seconds(10);
    // Started as a successor: report ready this long after serving (both
    // generations serve meanwhile). Zero: at once.
    Duration readyDelay = Duration::zero();
    Duration successorReadyTimeout = std::chrono::seconds(10);
    Duration successorStopGrace = std::chrono::seconds(10);
    // SIGUSR1's CPU profiles go here (an existing directory).
    std::string profileDir = ".";
  };

  // What it needs of the server, called on the loop's thread.
  struct Server {
    std::function<std::vector<int>()> listeningFds;
    std::function<size_t()> connectionCount;
    // Stop accepting and drain; `done` once every connection has closed, or
    // at `deadline` after the rest were closed. Called again: a deadline of 0.
    std::function<void(Duration deadline, std::function<void()> done)> drain;
  };

  ServerLifecycle(EventLoop* loop, Options options);
  ~ServerLifecycle();
  ServerLifecycle(const ServerLifecycle&) = delete;
  ServerLifecycle& operator=(const ServerLifecycle&) = delete;

  // The server has started: signals now drain or restart it, and a
  // predecessor that started this process is told it serves (after
  // Options::readyDelay).
  void serving(Server server);
  [[nodiscard]] State state() const { return state_; }

 private:
  void onStopSignal(int signo);
  void onHangUp();
  void onSuccessorOutcome(const Successor::Outcome& outcome);
  void onSuccessorExit(pid_t pid, const std::string& status);
  void onDrained();
  void drain(Duration deadline);
  void force();
  void stopBoth(const char* signal);
  void tellSuccessor(const char* why);
  void reportReady();
  void finishIfDone();
  void giveUpWaiting();
  void say(const std::string& line) const;

  EventLoop* loop_;
  const Options options_;
  Server server_;
  State state_ = State::kStarting;
  int stopSignals_ = 0;  // the operator's SIGTERM / SIGINT, once serving
  bool drained_ = false;
  pid_t successorPid_ = -1;      // while one runs
  int successorTold_ = 0;        // SIGTERMs sent to it
  bool successorExited_ = true;  // none runs (or the one that ran has exited)
  TimerId readyTimer_;
  TimerId waitTimer_;  // drained, waiting for the successor (bounded)
  Successor successor_;
  SignalSet stop_;
  SignalSet hangUp_;
  inspect::ProfileSignal profile_;
};

}  // namespace libnet
