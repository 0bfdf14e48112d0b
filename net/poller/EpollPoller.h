// EpollPoller: the Poller backend on epoll with EPOLLET. Each Channel is added
// once with the interest it has and modified only when that interest changes;
// a connection (EpollConnectionIo) registers read and write together once, so
// the hot path makes no epoll_ctl calls. Owned by the EventLoop; loop thread
// only.
#pragma once

#include <sys/epoll.h>

#include <vector>

#include "base/UniqueFd.h"
#include "net/Poller.h"

namespace libnet {

class EpollPoller final : public Poller {
 public:
  explicit EpollPoller(EventLoop* loop);  // throws std::system_error
  ~EpollPoller() override;

  Timestamp poll(Duration timeout, ChannelList* active) override;
  void updateChannel(Channel* channel) override;
  void removeChannel(Channel* channel) override;
  // No EPOLL_CTL_DEL: closing the last reference to a file drops it from
  // every epoll set.
  void removeChannelBeforeClose(Channel* channel) override;
  [[nodiscard]] std::unique_ptr<ConnectionIo> newConnectionIo(
      const ConnectionIo::Parts& parts) override;
  [[nodiscard]] std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner,
                                                          int listenFd) override;
  [[nodiscard]] PollerKind kind() const override { return PollerKind::kEpoll; }

 private:
  static constexpr int kInitEventListSize = 64;
  void control(int op, Channel* channel);

  UniqueFd epollFd_;
  std::vector<struct epoll_event> events_;
};

}  // namespace libnet
