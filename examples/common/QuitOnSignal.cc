#include "examples/common/QuitOnSignal.h"

#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>

#include <unistd.h>
#include <utility>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "base/Logging.h"
#include "net/EventLoop.h"

namespace libnet {

namespace {

sigset_t stopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

int createSignalFd() {
  const sigset_t set = stopSignals();
  const int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "signalfd");
  return fd;
}

}  // namespace

void QuitOnSignal::blockStopSignals() {
  const sigset_t set = stopSignals();
  if (const int err = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    throw std::system_error(err, std::system_category(), "pthread_sigmask");
  }
}

QuitOnSignal::QuitOnSignal(EventLoop* loop, std::function<void()> onSignal)
    : loop_(loop),
      onSignal_(std::move(onSignal)),
      signalFd_(createSignalFd()),
      channel_(loop, signalFd_.get()) {
  channel_.setReadCallback([this](Timestamp) { handleRead(); });
  channel_.enableReading();
}

QuitOnSignal::~QuitOnSignal() {
  channel_.disableAll();
  channel_.remove();
}

void QuitOnSignal::handleRead() {
  // Edge-triggered: read every queued signal now.
  bool stop = false;
  signalfd_siginfo info;
  for (;;) {
    const ssize_t n = ::read(signalFd_.get(), &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) {
      LOG_INFO << "received SIG" << sigabbrev_np(static_cast<int>(info.ssi_signo))
               << ", shutting down";
      stop = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) LOG_SYSERR << "read signalfd";
    break;
  }
  if (!stop) return;
  if (onSignal_) {
    onSignal_();
  } else {
    loop_->quit();
  }
}

}  // namespace libnet
