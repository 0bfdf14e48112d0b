#include "net/Successor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/Channel.h"
#include "net/EventLoop.h"
#include "net/ListenFds.h"
#include "net/TimerId.h"

extern char** environ;

namespace libnet {

namespace {

constexpr std::string_view kReady = "READY\n";
constexpr const char* kReadyFdVariable = "LIBNET_READY_FD";
constexpr std::string_view kListenPidPrefix = "LISTEN_PID=";
constexpr const char* kClosedEarly = "closed its readiness pipe before it was ready";
// How long a successor that closed its readiness pipe has to exit before it
// is stopped as one that runs.
constexpr Duration kExitAfterClose = std::chrono::milliseconds(200);

bool isOurVariable(std::string_view entry) {
  for (std::string_view name :
       {"LISTEN_PID=", "LISTEN_FDS=", "LISTEN_FDNAMES=", "LIBNET_READY_FD="}) {
    if (entry.starts_with(name)) return true;
  }
  return false;
}

// Everything the child needs between fork and exec, made before fork: after
// it, in a process that may have other threads, the child may only make
// async-signal-safe calls (no allocation).
struct ExecPlan {
  std::string program;
  std::vector<std::string> args;
  std::vector<std::string> env;  // env.back(): LISTEN_PID=, room for the pid
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::vector<int> sources;  // to 3, 4, ...: the listening fds, then the pipe
  std::vector<int> copies;   // as many, filled in the child
  int copyBase = 0;          // above every source and target
  sigset_t noSignals{};
};

ExecPlan makePlan(const std::vector<int>& listeningFds, int readyFd,
                  const Successor::Options& options) {
  ExecPlan plan;
  plan.program = options.program;
  plan.args = options.argv;
  for (char** e = environ; e && *e; ++e) {
    if (!isOurVariable(*e)) plan.env.emplace_back(*e);
  }
  const int count = static_cast<int>(listeningFds.size());
  plan.env.push_back("LISTEN_FDS=" + std::to_string(count));
  plan.env.push_back(std::string(kReadyFdVariable) + "=" + std::to_string(kListenFdsStart + count));
  plan.env.push_back(std::string(kListenPidPrefix) + std::string(24, '\0'));
  for (std::string& a : plan.args) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (std::string& e : plan.env) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.sources = listeningFds;
  plan.sources.push_back(readyFd);
  plan.copies.resize(plan.sources.size());
  plan.copyBase = std::max(*std::max_element(plan.sources.begin(), plan.sources.end()),
                           kListenFdsStart + count) +
                  1;
  sigemptyset(&plan.noSignals);
  return plan;
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void execInChild(ExecPlan& plan) {
  ::sigprocmask(SIG_SETMASK, &plan.noSignals, nullptr);
  // By way of copies above them all: a source may sit on another's target
  // (a successor's own inherited sockets are on 3, 4, ...). The copies are
  // close-on-exec; dup2() leaves the targets without it.
  for (size_t i = 0; i < plan.sources.size(); ++i) {
    plan.copies[i] = ::fcntl(plan.sources[i], F_DUPFD_CLOEXEC, plan.copyBase);
    if (plan.copies[i] < 0) ::_exit(126);
  }
  for (size_t i = 0; i < plan.copies.size(); ++i) {
    if (::dup2(plan.copies[i], kListenFdsStart + static_cast<int>(i)) < 0) ::_exit(126);
  }
  // Nothing else of ours: not the copies, nor an fd this process inherited
  // without close-on-exec. (Where close_range(2) is missing, close-on-exec
  // still keeps ours out.)
  ::close_range(static_cast<unsigned>(kListenFdsStart + plan.copies.size()), ~0U, 0);
  char* digits = plan.env.back().data() + kListenPidPrefix.size();
  char reversed[24];
  int n = 0;
  for (pid_t pid = ::getpid(); pid > 0 && n < 23; pid /= 10)
    reversed[n++] = static_cast<char>('0' + pid % 10);
  for (int i = 0; i < n; ++i) digits[i] = reversed[n - 1 - i];
  digits[n] = '\0';
  ::execve(plan.program.c_str(), plan.argv.data(), plan.envp.data());
  ::_exit(127);
}

std::string describeStatus(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Through syscall(2): glibc 2.36's <sys/pidfd.h> declares its wrappers
// without C linkage, so C++ cannot link them.
int pidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0U)); }

bool pidfdSendSignal(int pidfd, int signo) {
  return ::syscall(SYS_pidfd_send_signal, pidfd, signo, nullptr, 0U) == 0;
}

std::string seconds(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace

// One successor: its readiness pipe and its exit (a pidfd) watched on the
// loop, the readiness timeout, and the stop of one that is not to serve.
// Shared by the Successor and whatever it has queued to the loop (and tied
// to its channels), so that the owner may go first.
class Successor::Child : public std::enable_shared_from_this<Child> {
 public:
  Child(EventLoop* loop, pid_t pid, UniqueFd pidfd, UniqueFd pipe, Duration stopGrace,
        Callback done)
      : loop_(loop),
        pid_(pid),
        pidfd_(std::move(pidfd)),
        pipe_(std::move(pipe)),
        stopGrace_(stopGrace),
        done_(std::move(done)) {}
  ~Child() {
    closeChannel(&pipeChannel_);
    closeChannel(&exitChannel_);
    cancelTimer(&readyTimer_);
    cancelTimer(&graceTimer_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  void watch(Duration readyTimeout) {
    pipeChannel_ = std::make_unique<Channel>(loop_, pipe_.get());
    pipeChannel_->tie(shared_from_this());
    pipeChannel_->setReadCallback([this](Timestamp) { onReadable(); });
    pipeChannel_->setCloseCallback([this] { onReadable(); });
    pipeChannel_->enableReading();
    exitChannel_ = std::make_unique<Channel>(loop_, pidfd_.get());
    exitChannel_->tie(shared_from_this());
    exitChannel_->setReadCallback([this](Timestamp) { onExit(); });
    exitChannel_->enableReading();
    readyTimer_ = loop_->runAfter(readyTimeout, [weak = weak_from_this(), readyTimeout] {
      if (auto self = weak.lock()) {
        self->readyTimer_ = TimerId();
        self->notReady("not ready within " + seconds(readyTimeout));
      }
    });
  }

  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] bool reported() const { return reported_; }
  [[nodiscard]] bool exited() const { return exited_; }

  bool signal(int signo) {
    if (exited_) return false;
    return pidfdSendSignal(pidfd_.get(), signo);
  }

  void setExitCallback(ExitCallback exited) {
    exitCallback_ = std::move(exited);
    if (exited_) runExitCallback();
  }

  // The owner is going: no callback runs; a successor whose readiness is
  // not known yet may be serving already, so it is asked to drain, not
  // killed; one being stopped keeps the SIGTERM it got.
  void abandon() {
    done_ = nullptr;
    exitCallback_ = nullptr;
    if (!exited_ && readiness_ == Readiness::kWaiting && signal(SIGTERM)) {
      LOG_WARN << "successor " << pid_
               << " abandoned before it was ready: sent SIGTERM, so that it drains the "
                  "connections it may have accepted";
    }
    cancelTimer(&readyTimer_);
    cancelTimer(&graceTimer_);
    closeChannel(&pipeChannel_);
    closeChannel(&exitChannel_);
    pipe_.reset();
  }

 private:
  enum class Readiness { kWaiting, kReady, kFailed };

  void onReadable() {
    if (readiness_ != Readiness::kWaiting) return;
    char buf[64];
    for (;;) {
      const ssize_t n = ::read(pipe_.get(), buf, sizeof buf);
      if (n > 0) {
        received_.append(buf, static_cast<size_t>(n));
        if (received_.size() >= kReady.size()) {
          if (received_.starts_with(kReady)) return becomeReady();
          return notReady("wrote something other than READY");
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n == 0) return pipeClosed();
      return notReady(std::string("readiness pipe: ") + std::strerror(errno));
    }
  }

  // A closed pipe is nearly always a successor on its way out (its fds are
  // closed before it can be waited for): its exit is given a moment to come,
  // so that one that exited is reported as such rather than signalled.
  void pipeClosed() {
    if (pipeClosed_) return;
    pipeClosed_ = true;
    if (pipeChannel_) pipeChannel_->disableAll();
    if (exited_) return notReady(kClosedEarly);
    cancelTimer(&readyTimer_);
    readyTimer_ = loop_->runAfter(kExitAfterClose, [weak = weak_from_this()] {
      if (auto self = weak.lock()) {
        self->readyTimer_ = TimerId();
        self->notReady(kClosedEarly);
      }
    });
  }

  void becomeReady() {
    readiness_ = Readiness::kReady;
    stopWaitingForReadiness();
    report({.ready = true, .pid = pid_, .why = ""});
  }

  // Not to serve: reported once it has exited; stopped meanwhile if it runs.
  void notReady(std::string why) {
    if (readiness_ != Readiness::kWaiting) return;
    readiness_ = Readiness::kFailed;
    why_ = std::move(why);
    stopWaitingForReadiness();
    if (exited_) return reportFailure();
    // It may have begun to accept from the shared sockets: a libnet server
    // drains on SIGTERM and answers what it took; SIGKILL would reset it.
    stopNote_ = signal(SIGTERM) ? "sent SIGTERM; " : "";
    graceTimer_ = loop_->runAfter(stopGrace_, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->onGraceOver();
    });
  }

  void onGraceOver() {
    graceTimer_ = TimerId();
    if (exited_) return;
    LOG_WARN << "successor " << pid_ << " still runs " << seconds(stopGrace_)
             << " after SIGTERM: sending SIGKILL";
    if (signal(SIGKILL)) stopNote_ += "SIGKILL after " + seconds(stopGrace_) + "; ";
  }

  // The pidfd is readable: the process has exited (and can be reaped).
  void onExit() {
    if (exited_) return;
    int status = 0;
    const pid_t got = ::waitpid(pid_, &status, WNOHANG);
    if (got == 0) {
      // Readable before the zombie can be waited for (not seen, but an
      // edge-triggered event would not come again): look again shortly.
      loop_->runAfter(std::chrono::milliseconds(10), [weak = weak_from_this()] {
        if (auto self = weak.lock()) self->onExit();
      });
      return;
    }
    exited_ = true;
    status_ =
        got == pid_ ? describeStatus(status) : "not reaped: " + std::string(std::strerror(errno));
    if (exitChannel_) exitChannel_->disableAll();
    cancelTimer(&graceTimer_);
    // What it wrote before it went (READY, say) is still in the pipe.
    if (readiness_ == Readiness::kWaiting) pipeClosed_ ? notReady(kClosedEarly) : onReadable();
    if (readiness_ == Readiness::kFailed) reportFailure();
    runExitCallback();
  }

  // From the loop's queue; taken from this object when it runs, so that an
  // owner that went meanwhile (abandon()) is not called.
  void runExitCallback() {
    loop_->queueInLoop([self = shared_from_this()] {
      ExitCallback exited = std::move(self->exitCallback_);
      self->exitCallback_ = nullptr;
      if (exited) exited(self->pid_, self->status_);
    });
  }

  void reportFailure() {
    if (!exited_) return;
    report({.ready = false, .pid = pid_, .why = why_ + " (" + stopNote_ + status_ + ")"});
  }

  // Once, from the loop's queue (not inside a channel's own event handling).
  void report(Outcome outcome) {
    if (reported_) return;
    reported_ = true;
    loop_->queueInLoop([self = shared_from_this(), outcome = std::move(outcome)] {
      Callback done = std::move(self->done_);
      self->done_ = nullptr;
      if (done) done(outcome);
    });
  }

  void stopWaitingForReadiness() {
    cancelTimer(&readyTimer_);
    if (pipeChannel_) pipeChannel_->disableAll();
    // Closed from the queue: this may run inside the pipe channel's handler.
    loop_->queueInLoop([self = shared_from_this()] {
      self->closeChannel(&self->pipeChannel_);
      self->pipe_.reset();
    });
  }

  void cancelTimer(TimerId* timer) {
    if (timer->valid()) loop_->cancel(*timer);
    *timer = TimerId();
  }

  static void closeChannel(std::unique_ptr<Channel>* channel) {
    if (!*channel) return;
    (*channel)->disableAll();
    (*channel)->remove();
    channel->reset();
  }

  EventLoop* loop_;
  const pid_t pid_;
  UniqueFd pidfd_;
  UniqueFd pipe_;
  const Duration stopGrace_;
  Callback done_;
  ExitCallback exitCallback_;
  std::unique_ptr<Channel> pipeChannel_;
  std::unique_ptr<Channel> exitChannel_;
  TimerId readyTimer_;
  TimerId graceTimer_;
  std::string received_;
  Readiness readiness_ = Readiness::kWaiting;
  std::string why_;
  std::string stopNote_;  // what was sent to stop it
  std::string status_;    // how it ended, once exited_
  bool pipeClosed_ = false;
  bool exited_ = false;
  bool reported_ = false;
};

Successor::Successor(EventLoop* loop) : loop_(loop) {}

Successor::~Successor() {
  if (child_) child_->abandon();
}

bool Successor::pending() const { return child_ && !child_->reported(); }

pid_t Successor::pid() const { return child_ && !child_->exited() ? child_->pid() : -1; }

bool Successor::signal(int signo) {
  loop_->assertInLoopThread();
  return child_ && child_->signal(signo);
}

void Successor::watchExit(ExitCallback exited) {
  loop_->assertInLoopThread();
  if (child_) return child_->setExitCallback(std::move(exited));
  loop_->queueInLoop([exited = std::move(exited)] { exited(-1, "not running"); });
}

bool Successor::start(const std::vector<int>& listeningFds, const Options& options, Callback done) {
  loop_->assertInLoopThread();
  if (pending()) return false;
  auto fail = [&](const char* call) {
    const std::string why = std::string(call) + ": " + std::strerror(errno);
    loop_->queueInLoop([done = std::move(done), why] { done({.ready = false, .why = why}); });
    return true;
  };
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC | O_NONBLOCK) < 0) return fail("pipe2");
  UniqueFd readEnd(pipeFds[0]);
  UniqueFd writeEnd(pipeFds[1]);
  ExecPlan plan = makePlan(listeningFds, writeEnd.get(), options);
  const pid_t pid = ::fork();
  if (pid < 0) return fail("fork");
  if (pid == 0) execInChild(plan);
  writeEnd.reset();
  // Our own unreaped child: its pid cannot be reused before we wait for it.
  // Our own child, not waited for: its pid cannot have been reused (unless
  // SIGCHLD is ignored, and then it is gone: ESRCH). Close-on-exec already.
  UniqueFd pidfd(pidfdOpen(pid));
  if (!pidfd) {
    const int error = errno;
    if (error != ESRCH) {
      ::kill(pid, SIGKILL);  // just forked: it cannot be serving yet
      ::waitpid(pid, nullptr, 0);
    }
    errno = error;
    return fail("pidfd_open");
  }
  LOG_INFO << "started successor " << pid << " on " << listeningFds.size()
           << " listening socket(s)";
  if (child_) child_->abandon();  // an earlier, ready one: no longer watched
  child_ = std::make_shared<Child>(loop_, pid, std::move(pidfd), std::move(readEnd),
                                   options.stopGrace, std::move(done));
  child_->watch(options.readyTimeout);
  return true;
}

bool Successor::notifyReady() {
  const char* value = ::getenv(kReadyFdVariable);
  if (!value) return false;
  const int fd = std::atoi(value);
  ::unsetenv(kReadyFdVariable);
  if (fd < kListenFdsStart) return false;
  UniqueFd pipe(fd);
  ssize_t n;
  do {
    n = ::write(pipe.get(), kReady.data(), kReady.size());
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(kReady.size());
}

}  // namespace libnet
