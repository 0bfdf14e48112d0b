// EpollPoller: the Poller backend on epoll with EPOLLET. Each Channel is added
// once with the interest it has and modified only when that interest changes;
// a connection (EpollConnectionIo) registers read and write together once, so
// the hot path makes no epoll_ctl calls.
//
// An event names its Channel by a slot of this poller's table and the slot's
// generation (epoll_event.data), not by the Channel's address: a connection's
// fd is closed without EPOLL_CTL_DEL (removeChannelBeforeClose), and should
// its socket live on elsewhere (a child forked without exec, a dup), epoll
// keeps reporting the old registration; those events carry a generation
// that is no longer the slot's and are dropped, where a pointer would point
// at a freed Channel.
//
// Its strategies (EpollConnectionIo, EpollAcceptorIo) are made by the
// backend's factory (PollerFactory.cc): they drive Channels, and know this
// class only through the Poller interface their Channels use.
//
// Owned by its loop (EventLoopBase); loop thread only.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Poller.h"

namespace libnet {

class EpollPoller final : public Poller {
 public:
  explicit EpollPoller(EventLoopBase* loop);  // throws std::system_error
  ~EpollPoller() override;

  Timestamp poll(Duration timeout, ChannelList* active) override;
  void updateChannel(Channel* channel) override;
  void removeChannel(Channel* channel) override;
  // No EPOLL_CTL_DEL: closing the last reference to a file drops it from
  // every epoll set.
  void removeChannelBeforeClose(Channel* channel) override;
  [[nodiscard]] PollerKind kind() const override { return PollerKind::kEpoll; }

 private:
  static constexpr int kInitEventListSize = 64;
  struct Slot {
    Channel* channel = nullptr;
    uint32_t generation = 0;
    bool added = false;  // in the epoll set
  };

  void control(int op, Channel* channel, uint32_t slot);
  void freeSlot(Channel* channel);

  UniqueFd epollFd_;
  std::vector<struct epoll_event> events_;
  std::vector<Slot> slots_;  // Channel::pollerState() is the index
  std::vector<uint32_t> freeSlots_;
};

}  // namespace libnet
