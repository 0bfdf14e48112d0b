#include "net/poller/EpollAcceptorIo.h"

namespace libnet {

EpollAcceptorIo::EpollAcceptorIo(EventLoopBase* loop, Owner* owner, int listenFd)
    : owner_(owner), channel_(loop, listenFd) {
  channel_.setReadCallback([owner](Timestamp) { owner->acceptPending(); });
}

EpollAcceptorIo::~EpollAcceptorIo() {
  channel_.disableAll();
  channel_.remove();
}

}  // namespace libnet
