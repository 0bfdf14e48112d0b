#include "net/poller/SendFile.h"

#include <signal.h>
#include <sys/sendfile.h>

#include <cerrno>
#include <ctime>

#include "net/OutputQueue.h"

namespace libnet {

namespace {

// Blocks SIGPIPE in this thread for its lifetime; if a SIGPIPE became pending
// meanwhile that was not pending before, it is consumed rather than left for
// the thread to receive later.
class SigPipeSuppressor {
 public:
  SigPipeSuppressor() {
    sigset_t pipe;
    ::sigemptyset(&pipe);
    ::sigaddset(&pipe, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe, &saved_);
    // Only a SIGPIPE the thread had blocked already can be pending now (an
    // unblocked one would have been delivered): ask only then, so the usual
    // case costs the two mask changes and nothing more.
    if (::sigismember(&saved_, SIGPIPE) == 1) {
      sigset_t pending;
      ::sigemptyset(&pending);
      ::sigpending(&pending);
      wasPending_ = ::sigismember(&pending, SIGPIPE) == 1;
    }
  }
  ~SigPipeSuppressor() {
    if (raised_ && !wasPending_) {
      sigset_t pipe;
      ::sigemptyset(&pipe);
      ::sigaddset(&pipe, SIGPIPE);
      const timespec zero{0, 0};
      while (::sigtimedwait(&pipe, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }
  SigPipeSuppressor(const SigPipeSuppressor&) = delete;
  SigPipeSuppressor& operator=(const SigPipeSuppressor&) = delete;

  // The call under way failed with EPIPE: it raised a SIGPIPE.
  void raised() { raised_ = true; }

 private:
  sigset_t saved_{};
  bool wasPending_ = false;
  bool raised_ = false;
};

}  // namespace

FileSendResult sendQueuedFile(OutputQueue* queue, int socketFd, bool* progressed) {
  OutputQueue::File& file = queue->firstFile();
  SigPipeSuppressor sigPipe;
  while (file.remaining > 0) {
    const ssize_t n = ::sendfile(socketFd, file.fd.get(), &file.offset, file.remaining);
    if (n > 0) {
      file.remaining -= static_cast<size_t>(n);
      *progressed = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return {FileSendResult::kBlocked, 0, nullptr};
    }
    // n == 0: the file shrank under us; the peer would wait forever for the
    // promised bytes, so the connection has to close.
    if (n == 0) return {FileSendResult::kFailed, ENODATA, "sendfile (the file ended early)"};
    const int err = errno;
    if (err == EPIPE) sigPipe.raised();
    return {FileSendResult::kFailed, err, "sendfile"};
  }
  queue->fileSent();
  return {FileSendResult::kDone, 0, nullptr};
}

}  // namespace libnet
