#include "examples/http/ServerLifecycle.h"

#include <signal.h>

#include <iostream>
#include <utility>

#include "net/EventLoop.h"

namespace libnet {

namespace {

const char* signalName(int signo) { return signo == SIGINT ? "SIGINT" : "SIGTERM"; }

}  // namespace

ServerLifecycle::ServerLifecycle(EventLoop* loop, Options options)
    : loop_(loop),
      options_(std::move(options)),
      successor_(loop),
      stop_(loop, {SIGINT, SIGTERM}, [this](int signo) { onStopSignal(signo); }),
      hangUp_(loop, {SIGHUP}, [this](int) { onHangUp(); }),
      profile_(loop, {.directory = options_.profileDir, .program = options_.name}) {}

ServerLifecycle::~ServerLifecycle() {
  if (readyTimer_.valid()) loop_->cancel(readyTimer_);
  if (waitTimer_.valid()) loop_->cancel(waitTimer_);
}

void ServerLifecycle::serving(Server server) {
  server_ = std::move(server);
  state_ = State::kServing;
  if (options_.readyDelay <= Duration::zero()) return reportReady();
  readyTimer_ = loop_->runAfter(options_.readyDelay, [this] {
    readyTimer_ = TimerId();
    reportReady();
  });
}

// To the predecessor that started this process, if one did; not once this
// one has begun to stop (the predecessor then sees the pipe close with the
// exit, and reports that).
void ServerLifecycle::reportReady() {
  if (state_ == State::kServing && Successor::notifyReady()) {
    say(": ready, told the process that started this one");
  }
}

void ServerLifecycle::onStopSignal(int signo) {
  if (state_ == State::kStarting) return loop_->quit();
  ++stopSignals_;
  switch (state_) {
    case State::kServing:
      state_ = State::kStopping;
      return drain(options_.drainTimeout);
    case State::kRestarting:
      state_ = State::kStoppingBoth;
      stopBoth(signalName(signo));
      return drain(options_.drainTimeout);
    case State::kHandingOver:
      // Draining already, with the full deadline: that stays.
      state_ = State::kStoppingBoth;
      stopBoth(signalName(signo));
      return tellSuccessor("it serves");
    default:
      if (stopSignals_ >= 2) force();
  }
}

void ServerLifecycle::stopBoth(const char* signal) {
  say(std::string(": ") + signal + " during a restart: stopping both this process and successor " +
      std::to_string(successorPid_));
  successor_.watchExit(
      [this](pid_t pid, const std::string& status) { onSuccessorExit(pid, status); });
}

void ServerLifecycle::force() {
  say(": second stop signal: closing what is left");
  if (!drained_) server_.drain(Duration::zero(), [this] { onDrained(); });
  if (state_ == State::kStoppingBoth && !successorExited_) {
    tellSuccessor(successorTold_ > 0 ? "forcing it too" : "it is not ready yet, but forced");
  }
}

void ServerLifecycle::onHangUp() {
  if (state_ != State::kServing) {
    say(state_ == State::kRestarting ? ": SIGHUP ignored, a successor is starting already"
                                     : ": SIGHUP ignored, stopping");
    return;
  }
  Successor::Options options{.argv = options_.argv,
                             .readyTimeout = options_.successorReadyTimeout,
                             .stopGrace = options_.successorStopGrace};
  successor_.start(server_.listeningFds(), options,
                   [this](const Successor::Outcome& o) { onSuccessorOutcome(o); });
  successorPid_ = successor_.pid();
  successorExited_ = successorPid_ < 0;
  successorTold_ = 0;
  state_ = State::kRestarting;
  if (successorPid_ > 0) say(": SIGHUP: started successor " + std::to_string(successorPid_));
}

void ServerLifecycle::onSuccessorOutcome(const Successor::Outcome& o) {
  if (o.ready) {
    if (state_ == State::kRestarting) {
      state_ = State::kHandingOver;
      say(": successor " + std::to_string(o.pid) + " is serving; stopping");
      return drain(options_.drainTimeout);
    }
    if (state_ == State::kStoppingBoth && successorTold_ == 0) tellSuccessor("it is serving");
    return;
  }
  // Not ready: it has been stopped and has exited (net/Successor.h).
  if (state_ == State::kRestarting) {
    state_ = State::kServing;
    successorExited_ = true;
    std::cerr << options_.name << ": successor " << o.pid << " failed: " << o.why
              << "; still serving" << std::endl;
    return;
  }
  say(": successor " + std::to_string(o.pid) + " failed: " + o.why);
}

void ServerLifecycle::tellSuccessor(const char* why) {
  if (successor_.signal(SIGTERM)) {
    ++successorTold_;
    say(": sent SIGTERM to successor " + std::to_string(successorPid_) + " (" + why + ")");
  }
}

void ServerLifecycle::onSuccessorExit(pid_t pid, const std::string& status) {
  successorExited_ = true;
  say(": successor " + std::to_string(pid) + " " + status);
  finishIfDone();
}

void ServerLifecycle::drain(Duration deadline) {
  std::cout << options_.name << " draining " << server_.connectionCount() << " connections"
            << std::endl;
  server_.drain(deadline, [this] { onDrained(); });
}

void ServerLifecycle::onDrained() {
  if (drained_) return;
  drained_ = true;
  if (state_ != State::kStoppingBoth || successorExited_) return finishIfDone();
  // The successor shares the sockets and may hold connections it accepted:
  // it is left to drain them, and waited for (bounded).
  say(": drained; waiting for successor " + std::to_string(successorPid_) +
      (successorTold_ > 0 ? " to drain and exit"
                          : ", not ready yet, to be ready (it is then told to drain) and exit"));
  const Duration bound = options_.successorReadyTimeout + options_.successorStopGrace +
                         options_.drainTimeout + std::chrono::seconds(5);
  waitTimer_ = loop_->runAfter(bound, [this] {
    waitTimer_ = TimerId();
    giveUpWaiting();
  });
}

void ServerLifecycle::giveUpWaiting() {
  say(": successor " + std::to_string(successorPid_) + " still runs; exiting without it");
  successorExited_ = true;
  finishIfDone();
}

void ServerLifecycle::finishIfDone() {
  if (!drained_ || (state_ == State::kStoppingBoth && !successorExited_)) return;
  if (waitTimer_.valid()) loop_->cancel(waitTimer_);
  waitTimer_ = TimerId();
  loop_->quit();
}

void ServerLifecycle::say(const std::string& line) const {
  std::cout << options_.name << line << std::endl;
}

}  // namespace libnet
