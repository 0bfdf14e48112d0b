// Poller: the readiness backend of one EventLoop. Edge-triggered semantics:
// a channel is reported when its fd becomes ready, and its handler drains it.
// Owned by the EventLoop (unique_ptr); loop thread only.
#pragma once

#include <memory>
#include <vector>

#include "base/Timestamp.h"
#include "net/PollerKind.h"

namespace libnet {

class Channel;
class EventLoop;

class Poller {
 public:
  using ChannelList = std::vector<Channel*>;

  explicit Poller(EventLoop* loop) : ownerLoop_(loop) {}
  virtual ~Poller() = default;
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Waits at most `timeout` for events; fills `active` with the channels that
  // are ready (their returned events set) and returns the wake-up time.
  virtual Timestamp poll(Duration timeout, ChannelList* active) = 0;
  // Adds or modifies the registration of `channel` to match its events().
  virtual void updateChannel(Channel* channel) = 0;
  // Removes `channel`; it must have no interest left.
  virtual void removeChannel(Channel* channel) = 0;
  // Runs the completion handlers of the last poll() (io_uring only).
  virtual void dispatchCompletions() {}

  [[nodiscard]] virtual PollerKind kind() const = 0;

  // Creates the backend for `kind`, after the LIBNET_POLLER environment
  // variable (epoll, uring, auto) has overridden it. kAuto picks io_uring if
  // the probe passes and this loop's ring can be built, else epoll, with one
  // log line saying why (the first time); kIoUring where io_uring cannot run
  // throws std::system_error naming the failed call.
  static std::unique_ptr<Poller> create(EventLoop* loop, PollerKind kind);
  // The kind create() would try first for `kind` (environment applied, kAuto
  // resolved by the probe and by earlier loops' ring failures).
  static PollerKind resolve(PollerKind kind);

 protected:
  EventLoop* ownerLoop_;
};

}  // namespace libnet
