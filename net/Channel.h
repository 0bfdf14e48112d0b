// Channel: the events of interest on one fd, and the callbacks to run when
// they fire. It never owns the fd; whoever owns the fd holds the Channel by
// value (or in a unique_ptr) next to it. A Channel is registered with its
// loop's Poller while it has interest; the Poller keeps its address, so it is
// neither copyable nor movable, and it must be remove()d before it dies.
//
// Event bits are the epoll ones (EPOLLIN == POLLIN etc. on Linux), so every
// backend speaks the same vocabulary. Delivery is edge-triggered: a handler
// must drain its fd (read/write/accept until EAGAIN) before returning.
//
// Loop thread only, except construction and setting the callbacks before the
// first enable*(): an acceptor for another loop builds its channel on the
// thread that makes it (see AcceptorIo.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/Timestamp.h"

namespace libnet {

class EventLoopBase;

class Channel {
 public:
  using EventCallback = std::function<void()>;
  using ReadEventCallback = std::function<void(Timestamp)>;

  Channel(EventLoopBase* loop, int fd);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Runs the callbacks for the events the poller reported (setReturnedEvents).
  void handleEvent(Timestamp receiveTime);

  void setReadCallback(ReadEventCallback cb) { readCallback_ = std::move(cb); }
  void setWriteCallback(EventCallback cb) { writeCallback_ = std::move(cb); }
  void setCloseCallback(EventCallback cb) { closeCallback_ = std::move(cb); }
  void setErrorCallback(EventCallback cb) { errorCallback_ = std::move(cb); }

  // Ties the channel to its owner's lifetime: events are dropped once the owner
  // is gone, and the owner is kept alive while a handler runs.
  void tie(const std::shared_ptr<void>& owner);

  [[nodiscard]] EventLoopBase* loop() const { return loop_; }
  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] uint32_t events() const { return events_; }
  void setReturnedEvents(uint32_t revents) { revents_ = revents; }
  // The events of the dispatch in progress.
  [[nodiscard]] uint32_t returnedEvents() const { return revents_; }
  [[nodiscard]] bool isNoneEvent() const { return events_ == kNoneEvent; }

  void enableReading() { setInterest(events_ | kReadEvent); }
  void enableWriting() { setInterest(events_ | kWriteEvent); }
  // For a socket that waits for room only now and then (a datagram socket
  // whose buffer filled), where EPOLLOUT kept on would report every freed
  // datagram.
  void disableWriting() { setInterest(events_ & ~kWriteEvent); }
  [[nodiscard]] bool isWriting() const { return (events_ & kWriteEvent) != 0; }
  // Both directions in one registration; with edge-triggered delivery this is
  // set once per connection and never toggled.
  void enableReadWrite() { setInterest(kReadEvent | kWriteEvent); }
  void disableAll() { setInterest(kNoneEvent); }

  // Unregisters from the poller. Must be called (with no interest left)
  // before destruction.
  void remove();
  // Drops all interest and unregisters, for an fd that its owner closes
  // right after and that nothing else refers to (not duplicated, not
  // inherited by a child): the epoll backend then leaves the kernel's
  // registration to go with the close (one epoll_ctl saved per connection,
  // as nginx does); io_uring still cancels its poll, which holds the file.
  // A duplicated fd would keep the registration, and its events, alive.
  void removeBeforeClose();

  // Bookkeeping owned by the Poller backend.
  [[nodiscard]] int pollerState() const { return pollerState_; }
  void setPollerState(int state) { pollerState_ = state; }

  static constexpr uint32_t kNoneEvent = 0;
  static const uint32_t kReadEvent;
  static const uint32_t kWriteEvent;

 private:
  void setInterest(uint32_t events);
  void handleEventWithGuard(Timestamp receiveTime);

  EventLoopBase* loop_;
  const int fd_;
  uint32_t events_ = 0;
  uint32_t revents_ = 0;
  int pollerState_ = -1;  // -1: never added
  bool registered_ = false;
  bool eventHandling_ = false;
  bool tied_ = false;
  std::weak_ptr<void> tie_;
  ReadEventCallback readCallback_;
  EventCallback writeCallback_;
  EventCallback closeCallback_;
  EventCallback errorCallback_;
};

}  // namespace libnet
