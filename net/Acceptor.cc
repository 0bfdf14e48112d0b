#include "net/Acceptor.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <system_error>

#include "base/Logging.h"
#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "net/EventLoop.h"
#include "net/LoopInternals.h"
#include "net/Poller.h"
#include "net/UnixSocketFile.h"

namespace libnet {

namespace {

// Whether an adopted socket is a Unix one; throws if it is no socket.
bool isUnixSocket(int fd) {
  const std::optional<SocketAddress> address = Socket::tryAddress(fd, /*peer=*/false);
  if (!address) {
    throw std::system_error(errno, std::system_category(),
                            "getsockname on listening fd " + std::to_string(fd));
  }
  return address->isUnix();
}

UniqueFd openSpareFd() { return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }

// The process's spare fd (see Acceptor.h): open while any Acceptor exists.
// Every step that frees or takes the spare's fd runs under its lock; other
// threads' accepts and opens do not, which is why it can go missing.
class SpareFd {
 public:
  enum class Drop {
    kDropped,      // a pending connection was accepted and closed
    kRetry,        // the accept was interrupted or aborted: try again now
    kNonePending,  // the backlog is empty
    kStalled,      // no spare (another thread has its fd): try again later
  };

  // Never destroyed: an acceptor on a thread that outlives static
  // destruction may still use it.
  static SpareFd& instance() {
    static SpareFd* const spare = new SpareFd;
    return *spare;
  }

  void attach() LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    if (users_++ == 0) {
      fd_ = openSpareFd();
      missing_.store(!fd_.valid());
    }
  }

  void detach() LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    if (--users_ == 0) {
      fd_.reset();
      missing_.store(false);
    }
  }

  // Cheap, without the lock: whether an accepted connection should be
  // offered to refillWith().
  [[nodiscard]] bool missing() const { return missing_.load(); }

  // Out of fds: frees the spare's fd, accepts one pending connection from
  // `listener` with it and closes that, and takes the fd back.
  Drop dropOne(Socket& listener) LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    if (!fd_ && !reopen()) return Drop::kStalled;
    // Before the fd is freed: whoever takes it must see that the spare is
    // missing (Acceptor::onAccepted) and give it back.
    missing_.store(true);
    fd_.reset();
    UniqueFd victim = listener.accept(nullptr);
    const int err = errno;
    const bool dropped = victim.valid();
    victim.reset();  // the peer sees the close
    reopen();
    if (dropped) return Drop::kDropped;
    if (err == EAGAIN || err == EWOULDBLOCK) return Drop::kNonePending;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) return Drop::kRetry;
    // EMFILE/ENFILE: another thread took the freed fd first. Or an error
    // (ENOBUFS, ENOMEM) that a later try may not meet.
    return Drop::kStalled;
  }

  // `fd` was just accepted while the spare was missing: reopens the spare
  // if there is an fd for it; if not, `fd` becomes the spare (shut down, so
  // that its peer sees the connection closed) and true is returned.
  bool refillWith(UniqueFd& fd) LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    if (fd_ || reopen() || users_ == 0) return false;
    ::shutdown(fd.get(), SHUT_RDWR);
    fd_ = std::move(fd);
    missing_.store(false);
    return true;
  }

  // Reopens the spare if it is missing; true if it is there now.
  bool restore() LIBNET_EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return fd_ || reopen();
  }

 private:
  SpareFd() = default;

  bool reopen() LIBNET_REQUIRES(mutex_) {
    fd_ = openSpareFd();
    missing_.store(!fd_.valid() && users_ > 0);
    return fd_.valid();
  }

  Mutex mutex_;
  UniqueFd fd_ LIBNET_GUARDED_BY(mutex_);
  int users_ LIBNET_GUARDED_BY(mutex_) = 0;
  std::atomic<bool> missing_{false};
};

}  // namespace

Acceptor::Acceptor(EventLoop* loop, const SocketAddress& listenAddr, bool reusePort,
                   std::optional<mode_t> unixFileMode)
    : loop_(loop),
      unix_(listenAddr.isUnix()),
      socket_(Socket::createNonblocking(listenAddr.family())) {
  if (unix_) {
    bindUnix(listenAddr, unixFileMode);
  } else {
    socket_.setReuseAddr(true);
    if (reusePort) socket_.setReusePort(true);
    socket_.bindAddress(listenAddr);
  }
  io_ = LoopInternals::poller(*loop_).newAcceptorIo(this, socket_.fd());
  SpareFd::instance().attach();
}

Acceptor::Acceptor(EventLoop* loop, UniqueFd listening)
    : loop_(loop),
      unix_(isUnixSocket(listening.get())),
      socket_(std::move(listening)),
      adopted_(true) {
  // Non-blocking: both backends expect it (epoll's accept4 loop ends on
  // EAGAIN). The flag is on the open file, which the process that passed
  // the socket shares: it had it non-blocking too if it was ours.
  const int flags = ::fcntl(socket_.fd(), F_GETFL);
  if (flags < 0 || ::fcntl(socket_.fd(), F_SETFL, flags | O_NONBLOCK) < 0) {
    throw std::system_error(errno, std::system_category(), "fcntl O_NONBLOCK on a listening fd");
  }
  io_ = LoopInternals::poller(*loop_).newAcceptorIo(this, socket_.fd());
  SpareFd::instance().attach();
}

void Acceptor::bindUnix(const SocketAddress& listenAddr, std::optional<mode_t> fileMode) {
  if (!listenAddr.isAbstract()) file_ = std::make_unique<UnixSocketFile>(listenAddr.path());
  socket_.bindAddress(listenAddr);
  if (file_) file_->bound(fileMode);
  // Listening at once: a socket bound but not yet listening refuses
  // connections, so another server's stale-file check would take it for a
  // dead one's and remove its file (UnixSocketFile holds the directory's
  // lock until now for that reason). Clients that come before listen() wait
  // in the backlog.
  socket_.listen();
  if (file_) file_->listening();
}

Acceptor::~Acceptor() {
  if (retryTimer_.valid()) loop_->cancel(retryTimer_);
  if (continueTimer_.valid()) loop_->cancel(continueTimer_);
  io_.reset();
  SpareFd::instance().detach();
}

void Acceptor::listen() {
  if (listening_) return;
  if (!unix_ && !adopted_) socket_.listen();
  listening_ = true;
  // Queued (from another thread) ahead of anything that could destroy us on
  // the loop.
  loop_->runInLoop([this] { io_->start(); });
}

void Acceptor::setDeferAccept(int seconds) {
  if (unix_) return;
  if (::setsockopt(socket_.fd(), IPPROTO_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds) < 0) {
    throw std::system_error(errno, std::system_category(),
                            "setsockopt TCP_DEFER_ACCEPT " + localAddress().toIpPort());
  }
}

void Acceptor::onAccepted(UniqueFd fd, const std::optional<SocketAddress>& peer) {
  // The fd may be the spare's, freed by another acceptor's drop a moment ago.
  if (SpareFd::instance().missing() && SpareFd::instance().refillWith(fd)) {
    ++droppedForFdLimit_;
    LOG_WARN << "out of file descriptors: closed a new connection on " << localAddress().toIpPort()
             << " to keep a spare fd (" << droppedForFdLimit_ << " so far)";
    return;
  }
  if (callback_) callback_(std::move(fd), peer);
}

void Acceptor::stopAccepting(std::function<void()> stopped) {
  loop_->assertInLoopThread();
  if (stopping_) return;
  stopping_ = true;
  if (retryTimer_.valid()) loop_->cancel(retryTimer_);
  if (continueTimer_.valid()) loop_->cancel(continueTimer_);
  retryTimer_ = TimerId();
  continueTimer_ = TimerId();
  io_->stop([this, stopped = std::move(stopped)] {
    acceptBacklog();
    stopped();
  });
}

void Acceptor::acceptBacklog() {
  // Bounded by the backlog (somaxconn), plus what arrives meanwhile: a cap
  // keeps a connect storm from holding the loop here for ever.
  constexpr int kMaxBacklogAccepts = 65536;
  for (int i = 0; i < kMaxBacklogAccepts; ++i) {
    SocketAddress peer;
    UniqueFd fd = socket_.accept(&peer);
    if (fd) {
      onAccepted(std::move(fd), peer);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
    if (errno == EMFILE || errno == ENFILE) {
      if (dropOneForFdLimit()) continue;
    }
    return;
  }
}

bool Acceptor::acceptPending() {
  loop_->assertInLoopThread();
  if (stopping_) return false;
  bool acceptedAny = false;
  for (int accepted = 0;; ++accepted) {
    if (accepted == kMaxAcceptsPerCall) {
      continueLater();
      return true;
    }
    SocketAddress peer;
    UniqueFd fd = socket_.accept(&peer);
    if (fd) {
      onAccepted(std::move(fd), peer);
      acceptedAny = true;
      continue;
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return acceptedAny;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
    if (err == EMFILE || err == ENFILE) {
      if (!dropOneForFdLimit()) return acceptedAny;
      continue;
    }
    // ENOBUFS, ENOMEM, EPERM (firewall): nothing to do but report. Stop this
    // round; the next connection's edge brings us back.
    errno = err;
    LOG_SYSERR << "accept on " << localAddress().toIpPort();
    return acceptedAny;
  }
}

bool Acceptor::dropOneForFdLimit() {
  loop_->assertInLoopThread();
  switch (SpareFd::instance().dropOne(socket_)) {
    case SpareFd::Drop::kDropped:
      ++droppedForFdLimit_;
      LOG_WARN << "out of file descriptors: closed a new connection on "
               << localAddress().toIpPort() << " (" << droppedForFdLimit_ << " so far)";
      return true;
    case SpareFd::Drop::kRetry:
      return true;
    case SpareFd::Drop::kNonePending:
      return false;
    case SpareFd::Drop::kStalled:
      retryLater();
      return false;
  }
  return false;
}

void Acceptor::continueLater() {
  if (continueTimer_.valid()) return;
  // A timer due now: it runs on the loop's next turn, after the events that
  // turn brings (no edge would come for connections already pending).
  continueTimer_ = loop_->runAfter(Duration::zero(), [this] {
    continueTimer_ = TimerId();
    io_->resume();
  });
}

void Acceptor::retryLater() {
  if (retryTimer_.valid()) return;
  if (!stalled_) {
    stalled_ = true;  // one line per episode, not one per retry
    LOG_ERROR << "out of file descriptors and the spare fd is in use elsewhere: connections "
              << "pending on " << localAddress().toIpPort() << " are retried every "
              << std::chrono::duration_cast<std::chrono::milliseconds>(kStalledRetry).count()
              << " ms";
  }
  retryTimer_ = loop_->runAfter(kStalledRetry, [this] {
    retryTimer_ = TimerId();
    io_->resume();
    // Pending or not, the spare comes back as soon as there is an fd for it,
    // so that the next connection over the limit can be dropped.
    if (SpareFd::instance().restore()) {
      stalled_ = false;
    } else {
      retryLater();
    }
  });
}

}  // namespace libnet
