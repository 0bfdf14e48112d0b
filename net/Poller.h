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

  [[nodiscard]] virtual PollerKind kind() const = 0;

  // Creates the backend for `kind` (kAuto picks the best available).
  static std::unique_ptr<Poller> create(EventLoop* loop, PollerKind kind);

 protected:
  EventLoop* ownerLoop_;
};

}  // namespace libnet
