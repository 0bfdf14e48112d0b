#include "net/poller/UringAcceptorIo.h"

#include <liburing.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "base/Logging.h"
#include "net/poller/UringContext.h"

namespace libnet {

UringAcceptorIo::UringAcceptorIo(UringContext* context, EventLoopBase* loop, Owner* owner,
                                 int listenFd)
    : context_(context), owner_(owner), listenFd_(listenFd), channel_(loop, listenFd) {
  channel_.setReadCallback([this](Timestamp) { onReadable(); });
}

namespace {

void cancelAccept(UringContext* context, uint64_t token) {
  io_uring_sqe* sqe = context->getSqe();
  io_uring_prep_cancel64(sqe, completionUserData(UringOp::kAccept, token), 0);
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kIgnore, 0));
}

}  // namespace

UringAcceptorIo::~UringAcceptorIo() {
  if (token_ != 0) {
    if (acceptArmed_) cancelAccept(context_, token_);
    // A connection accepted before the cancel lands is closed by the poller,
    // which finds its owner gone.
    context_->unregisterHandler(token_);
  }
  channel_.disableAll();
  channel_.remove();
}

void UringAcceptorIo::start() {
  token_ = context_->registerHandler(this);
  armAccept();
}

void UringAcceptorIo::stop(std::function<void()> stopped) {
  stopping_ = true;
  channel_.disableAll();
  if (!acceptArmed_) {
    stopped();
    return;
  }
  stopped_ = std::move(stopped);
  cancelAccept(context_, token_);
}

void UringAcceptorIo::armAccept() {
  io_uring_sqe* sqe = context_->getSqe();
  io_uring_prep_multishot_accept(sqe, listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kAccept, token_));
  acceptArmed_ = true;
}

void UringAcceptorIo::onCompletion(UringOp, int32_t res, uint32_t flags) {
  if (!(flags & IORING_CQE_F_MORE)) acceptArmed_ = false;
  if (stopping_) {
    // Stopping: a socket accepted before the cancel landed is served.
    if (res >= 0) owner_->onAccepted(UniqueFd(res), std::nullopt);
    if (!acceptArmed_ && stopped_) std::exchange(stopped_, nullptr)();
    return;
  }
  if (res >= 0) {
    // Multishot accept has no per-connection address buffer; rather than a
    // getpeername per connection, the connection asks its socket if and
    // when someone wants the address.
    owner_->onAccepted(UniqueFd(res), std::nullopt);
  } else if (res == -EMFILE || res == -ENFILE) {
    while (owner_->dropOneForFdLimit()) {
    }
    if (!acceptArmed_) {
      channel_.enableReading();  // onReadable() goes back to the multishot accept
      return;
    }
  } else if (res == -ECANCELED) {
    return;
  } else if (res != -EAGAIN && res != -EINTR && res != -ECONNABORTED && res != -EPROTO) {
    errno = -res;
    LOG_SYSERR << "accept on " << owner_->listenAddress().toIpPort();
  }
  if (!acceptArmed_) armAccept();
}

void UringAcceptorIo::onReadable() {
  if (owner_->acceptPending() && !acceptArmed_) {
    channel_.disableAll();  // fds are available again
    armAccept();
  }
}

}  // namespace libnet
