#include "base/SignalMask.h"

#include <pthread.h>

#include <system_error>

namespace libnet {

bool isSynchronousSignal(int signo) {
  switch (signo) {
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGTRAP:
    case SIGABRT:
    case SIGSYS:
      return true;
    default:
      return false;
  }
}

sigset_t asyncSignals() {
  sigset_t set;
  ::sigfillset(&set);  // leaves out glibc's internal signals by itself
  for (const int signo :
       {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS, SIGPIPE, SIGPROF}) {
    ::sigdelset(&set, signo);
  }
  return set;
}

void blockAsyncSignalsInThisThread() {
  const sigset_t set = asyncSignals();
  if (const int err = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    throw std::system_error(err, std::system_category(), "pthread_sigmask");
  }
}

BlockAsyncSignals::BlockAsyncSignals() {
  const sigset_t set = asyncSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, &saved_);
}

BlockAsyncSignals::~BlockAsyncSignals() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

}  // namespace libnet
