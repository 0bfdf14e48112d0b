#include "net/OutputQueue.h"

#include <signal.h>
#include <sys/sendfile.h>

#include <cerrno>
#include <ctime>

#include "net/BufferPool.h"

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

void OutputQueue::append(std::string_view data) {
  if (data.empty()) return;
  Buffer& to = tail();
  pool_->lend(&to);
  to.append(data);
}

void OutputQueue::append(Buffer* buffer, bool lendBack) {
  if (buffer->readableBytes() == 0) return;
  if (!empty()) {
    append(buffer->view());
    buffer->retrieveAll();
    return;
  }
  // Nothing queued: take the bytes as they are (a view of received bytes
  // included: they go out from where the kernel put them), and give
  // `buffer` our empty storage.
  waiting_.exchange(*buffer);
  if (lendBack) pool_->lend(buffer);
}

void OutputQueue::appendFile(UniqueFd file, off_t offset, size_t length) {
  if (length == 0) return;
  files_.push_back(PendingFile{std::move(file), offset, length});
}

void OutputQueue::appendFile(UniqueFd file, off_t offset, size_t length, Buffer* head) {
  if (head != nullptr) {
    append(head->view());
    head->retrieveAll();
  }
  appendFile(std::move(file), offset, length);
}

OutputQueue::FileResult OutputQueue::sendFile(int socketFd, bool* progressed) {
  PendingFile& file = files_.front();
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
      return {FileResult::kBlocked, 0, nullptr};
    }
    // n == 0: the file shrank under us; the peer would wait forever for the
    // promised bytes, so the connection has to close.
    if (n == 0) return {FileResult::kFailed, ENODATA, "sendfile (the file ended early)"};
    const int err = errno;
    if (err == EPIPE) sigPipe.raised();
    return {FileResult::kFailed, err, "sendfile"};
  }
  waiting_.swap(file.after);  // waiting_ is empty whenever a file is first
  files_.pop_front();
  return {FileResult::kDone, 0, nullptr};
}

bool OutputQueue::startSend() {
  if (waiting_.readableBytes() == 0) return false;
  inFlight_.exchange(waiting_);
  inFlightReleased_ = 0;
  return true;
}

void OutputQueue::sent(size_t bytes) {
  inFlight_.retrieve(bytes);
  if (inFlight_.readableBytes() == 0) {
    // Viewed bytes (a receive buffer) go back as soon as they are out.
    inFlight_.releaseBorrowed();
    inFlightReleased_ = 0;
  } else if (inFlight_.prependableBytes() >= inFlightReleased_ + kReleaseStep) {
    // A large send going out in parts (a slow peer): the sent part's
    // memory goes back now, not when the rest is out, or a connection
    // holding a full queue would keep up to twice it resident.
    inFlightReleased_ = inFlight_.releaseSpentPages(inFlightReleased_);
  }
}

void OutputQueue::releaseViews() {
  inFlight_.releaseBorrowed();
  waiting_.releaseBorrowed();
}

size_t OutputQueue::bufferedBytes() const {
  size_t bytes = inFlight_.readableBytes() + waiting_.readableBytes();
  for (const PendingFile& file : files_) bytes += file.after.readableBytes();
  return bytes;
}

size_t OutputQueue::queuedBytes() const {
  size_t bytes = bufferedBytes();
  for (const PendingFile& file : files_) bytes += file.remaining;
  return bytes;
}

size_t OutputQueue::capacity() const {
  size_t bytes = inFlight_.capacity() + waiting_.capacity();
  for (const PendingFile& file : files_) bytes += file.after.capacity();
  return bytes;
}

void OutputQueue::reclaim() {
  pool_->reclaim(&inFlight_);
  pool_->reclaim(&waiting_);
}

void OutputQueue::recycle() {
  // What a cancelled send left is not going anywhere now.
  inFlight_.retrieveAll();
  waiting_.retrieveAll();
  pool_->recycle(&inFlight_);
  pool_->recycle(&waiting_);
}

void OutputQueue::clear() {
  files_.clear();
  waiting_.retrieveAll();
  pool_->reclaim(&waiting_);
  // inFlight_ is left alone: a send may still be reading it, and its storage
  // must not serve another connection before that send completes.
}

}  // namespace libnet
