// EpollAcceptorIo: a listening socket on an epoll loop. Its Channel is
// registered for readable edges; on each, the Acceptor drains accept4(2)
// until EAGAIN (with edge-triggered polling a connection left in the backlog
// would not be reported again).
//
// Owned by its Acceptor; made on the thread that creates the Acceptor, loop
// thread only from start() on (see AcceptorIo.h).
#pragma once

#include "net/AcceptorIo.h"
#include "net/Channel.h"

namespace libnet {

class EventLoopBase;

class EpollAcceptorIo final : public AcceptorIo {
 public:
  EpollAcceptorIo(EventLoopBase* loop, Owner* owner, int listenFd);
  ~EpollAcceptorIo() override;

  void start() override { channel_.enableReading(); }
  void resume() override { owner_->acceptPending(); }
  // Nothing is in flight on epoll: accepts happen inside acceptPending().
  void stop(std::function<void()> stopped) override {
    channel_.disableAll();
    stopped();
  }

 private:
  Owner* owner_;
  Channel channel_;
};

}  // namespace libnet
