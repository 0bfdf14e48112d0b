#include "net/ConnectAttempt.h"

#include <sys/socket.h>

#include <cerrno>
#include <system_error>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/EventLoop.h"
#include "net/Socket.h"

namespace libnet {

ConnectAttempt::Begun ConnectAttempt::begin(const SocketAddress& server) {
  Begun begun;
  try {
    begun.fd = Socket::createNonblocking(server.family()).releaseFd();
  } catch (const std::system_error& e) {
    begun.error = e.code().value();
    // Out of fds or memory may pass; a family the kernel lacks will not.
    begun.permanent = begun.error != EMFILE && begun.error != ENFILE && begun.error != ENOBUFS &&
                      begun.error != ENOMEM;
    LOG_ERROR << "connect to " << server.toIpPort() << ": " << e.what()
              << (begun.permanent ? " (giving up)" : "");
    return begun;
  }
  const int rc = ::connect(begun.fd.get(), server.sockAddr(), server.sockLen());
  const int err = rc == 0 ? 0 : errno;
  switch (err) {
    case 0:
    case EINPROGRESS:
    case EINTR:
    case EISCONN:
      return begun;
    case EAGAIN:  // a Unix server's backlog is full
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case ECONNREFUSED:
    case ENOENT:  // a Unix socket's path, before its server has made it
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ETIMEDOUT:
      LOG_DEBUG << "connect to " << server.toIpPort() << ": " << strerrorTl(err);
      break;
    default:
      // EACCES, EPERM, EINVAL, EAFNOSUPPORT, ...: retrying cannot help.
      errno = err;
      LOG_SYSERR << "connect to " << server.toIpPort() << " failed for good";
      begun.permanent = true;
      break;
  }
  begun.fd.reset();
  begun.error = err;
  return begun;
}

int ConnectAttempt::outcome(int fd, const SocketAddress& server) {
  const int err = Socket::getSocketError(fd);
  if (err != 0) {
    LOG_DEBUG << "connect to " << server.toIpPort() << ": " << strerrorTl(err);
    return err;
  }
  if (!server.isUnix() && Socket::isSelfConnect(fd)) {
    // Only possible when nothing listens on the port (a listener would hold
    // it, and the kernel would not pick it as our ephemeral port): to the
    // user that is a refusal.
    LOG_WARN << "connect to " << server.toIpPort() << " connected to itself";
    return ECONNREFUSED;
  }
  return 0;
}

std::shared_ptr<ConnectAttempt> ConnectAttempt::start(EventLoop* loop, const InetAddress& server,
                                                      DoneCallback done) {
  loop->assertInLoopThread();
  auto attempt = std::make_shared<ConnectAttempt>(Private{}, loop, server, std::move(done));
  attempt->begun_ = begin(server);
  if (attempt->begun_.error == 0) attempt->watch();
  return attempt;
}

ConnectAttempt::ConnectAttempt(Private, EventLoop* loop, const InetAddress& server,
                               DoneCallback done)
    : loop_(loop), address_(server), done_(std::move(done)) {}

ConnectAttempt::~ConnectAttempt() { cancel(); }

void ConnectAttempt::watch() {
  channel_ = std::make_shared<Channel>(loop_, begun_.fd.get());
  channel_->tie(shared_from_this());
  // Raw `this` is safe: the tie keeps the attempt alive while a handler
  // runs, and drops the events once it is gone.
  channel_->setWriteCallback([this] { completed(false); });
  channel_->setErrorCallback([this] { completed(true); });
  channel_->enableWriting();
}

void ConnectAttempt::unwatch() {
  if (!channel_) return;
  channel_->disableAll();
  channel_->remove();
  loop_->queueInLoop([channel = std::move(channel_)] {});
}

void ConnectAttempt::completed(bool errorEvent) {
  // An error and a write event may come in one dispatch: the first decides.
  if (!channel_) return;
  unwatch();
  int err = outcome(begun_.fd.get(), address_);
  // EPOLLERR with SO_ERROR already cleared should not happen; the owner
  // still needs a non-zero reason.
  if (err == 0 && errorEvent) err = EIO;
  if (err != 0) begun_.fd.reset();  // closed before anyone hears of it
  DoneCallback done = std::move(done_);
  done_ = nullptr;
  if (done) done(*this, err);
}

void ConnectAttempt::cancel() {
  unwatch();
  begun_.fd.reset();
  done_ = nullptr;
}

}  // namespace libnet
