#include "net/Successor.h"

#include <fcntl.h>
#include <signal.h>
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

// Reaps a successor that is not to serve, killing it first if it still runs.
std::string reap(pid_t pid) {
  int status = 0;
  pid_t got = ::waitpid(pid, &status, WNOHANG);
  if (got == 0) {
    ::kill(pid, SIGKILL);
    got = ::waitpid(pid, &status, 0);
  }
  return got == pid ? describeStatus(status) : "not reaped";
}

}  // namespace

// One successor being started: its readiness pipe on the loop, the timeout,
// and the outcome. Shared by the Successor and whatever it has queued to the
// loop, so that the owner may go first.
class Successor::Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  Attempt(EventLoop* loop, Successor* owner, pid_t pid, UniqueFd pipe, Callback done)
      : loop_(loop), owner_(owner), pipe_(std::move(pipe)), done_(std::move(done)) {
    outcome_.pid = pid;
  }
  ~Attempt() { closePipe(); }

  void watch(Duration timeout) {
    channel_ = std::make_unique<Channel>(loop_, pipe_.get());
    channel_->setReadCallback([this](Timestamp) { onReadable(); });
    channel_->setCloseCallback([this] { onReadable(); });
    channel_->enableReading();
    timer_ = loop_->runAfter(timeout, [weak = weak_from_this(), timeout] {
      if (auto self = weak.lock()) {
        self->timer_ = TimerId();
        self->settle(false, "not ready within " + std::to_string(toMillis(timeout)) + " ms");
      }
    });
  }

  // The owner is going: no callback; a successor not known to be ready is
  // killed.
  void abandon() {
    if (finished_) return;
    finished_ = true;
    if (timer_.valid()) loop_->cancel(timer_);
    closePipe();
    if (!outcome_.ready) (void)reap(outcome_.pid);
  }

 private:
  static long long toMillis(Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  }

  void onReadable() {
    char buf[64];
    for (;;) {
      const ssize_t n = ::read(pipe_.get(), buf, sizeof buf);
      if (n > 0) {
        received_.append(buf, static_cast<size_t>(n));
        if (received_.size() >= kReady.size()) {
          const bool ready = received_.starts_with(kReady);
          return settle(ready, ready ? "" : "wrote something other than READY");
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      return settle(false, n == 0 ? "closed its readiness pipe before it was ready"
                                  : std::string("readiness pipe: ") + std::strerror(errno));
    }
  }

  // Once: stops watching, and finishes from the loop's queue (not inside
  // the channel's own event handling).
  void settle(bool ready, std::string why) {
    if (settled_) return;
    settled_ = true;
    outcome_.ready = ready;
    outcome_.why = std::move(why);
    channel_->disableAll();
    if (timer_.valid()) loop_->cancel(timer_);
    timer_ = TimerId();
    loop_->queueInLoop([self = shared_from_this()] { self->finish(); });
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    closePipe();
    if (!outcome_.ready) outcome_.why += " (" + reap(outcome_.pid) + ")";
    // From here the owner may start another (from the callback, say).
    std::shared_ptr<Attempt> keep = std::move(owner_->attempt_);
    Callback done = std::move(done_);
    if (done) done(outcome_);
  }

  void closePipe() {
    if (channel_) {
      channel_->disableAll();
      channel_->remove();
      channel_.reset();
    }
    pipe_.reset();
  }

  EventLoop* loop_;
  Successor* owner_;  // while not finished
  UniqueFd pipe_;
  Callback done_;
  std::unique_ptr<Channel> channel_;
  TimerId timer_;
  std::string received_;
  Outcome outcome_;
  bool settled_ = false;
  bool finished_ = false;
};

Successor::Successor(EventLoop* loop) : loop_(loop) {}

Successor::~Successor() {
  if (attempt_) attempt_->abandon();
}

bool Successor::start(const std::vector<int>& listeningFds, const Options& options, Callback done) {
  loop_->assertInLoopThread();
  if (attempt_) return false;
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
  LOG_INFO << "started successor " << pid << " on " << listeningFds.size()
           << " listening socket(s)";
  attempt_ = std::make_shared<Attempt>(loop_, this, pid, std::move(readEnd), std::move(done));
  attempt_->watch(options.readyTimeout);
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
