// UringAcceptorIo: a listening socket on an io_uring loop: one multishot
// accept, re-armed whenever a completion comes without IORING_CQE_F_MORE.
//
// Out of fds, io_uring's accept fails at once and forever: it reserves an fd
// before it looks at the backlog. So on EMFILE/ENFILE the pending
// connections are dropped through the Acceptor's spare fd, as on epoll, and
// the acceptor waits by readiness (a Channel on the listening socket) until
// an accept4(2) succeeds again, then goes back to the multishot accept.
//
// Owned by its Acceptor; made on the thread that creates the Acceptor
// (nothing registered), loop thread only from start() on (see AcceptorIo.h).
#pragma once

#include <cstdint>
#include <functional>

#include "net/AcceptorIo.h"
#include "net/Channel.h"
#include "net/poller/CompletionHandler.h"

namespace libnet {

class EventLoopBase;
class UringContext;

class UringAcceptorIo final : public AcceptorIo, private CompletionHandler {
 public:
  UringAcceptorIo(UringContext* context, EventLoopBase* loop, Owner* owner, int listenFd);
  ~UringAcceptorIo() override;

  void start() override;
  void resume() override {
    if (!stopping_) onReadable();
  }
  // Cancels the multishot accept and waits for its last completion: the
  // connections completed before the cancel lands are delivered, not closed.
  void stop(std::function<void()> stopped) override;

 private:
  void onCompletion(UringOp op, int32_t res, uint32_t flags) override;
  void onReadable();
  void armAccept();

  UringContext* context_;
  Owner* owner_;
  int listenFd_;
  Channel channel_;  // the readiness fallback while out of fds
  uint64_t token_ = 0;
  bool acceptArmed_ = false;
  bool stopping_ = false;  // from stop() on
  // From stop(): runs once the multishot accept has ended.
  std::function<void()> stopped_;
};

}  // namespace libnet
