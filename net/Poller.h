// Poller: the I/O backend of one EventLoop. It reports readiness of Channels
// with edge-triggered semantics (a channel is reported when its fd becomes
// ready, and its handler drains it), and it makes the I/O strategies through
// which connections and acceptors of its loop move bytes
// (newConnectionIo / newAcceptorIo). A backend is one Poller, one
// ConnectionIo and one AcceptorIo under net/poller/; nothing else in net/
// knows which one runs. Made by the factory in net/poller/PollerFactory.h;
// owned by its loop (EventLoopBase::poller_, set by EventLoop's
// constructor). Loop thread only, except newConnectionIo() and
// newAcceptorIo(): the thread that creates a connection or acceptor for this
// loop calls them, and they register nothing (the strategy's start() does,
// on the loop).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "base/Timestamp.h"
#include "net/AcceptorIo.h"
#include "net/ConnectionIo.h"
#include "net/PollerKind.h"

namespace libnet {

class Channel;
class EventLoopBase;

class Poller {
 public:
  using ChannelList = std::vector<Channel*>;

  explicit Poller(EventLoopBase* loop) : ownerLoop_(loop) {}
  virtual ~Poller() = default;
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Waits at most `timeout` for events; fills `active` with the channels that
  // are ready (their returned events set) and returns the wake-up time.
  virtual Timestamp poll(Duration timeout, ChannelList* active) = 0;
  // Runs what else the last poll() brought (completions), in the same phase
  // as the channel callbacks. Readiness backends have nothing to do here.
  virtual void dispatchCompletions() {}
  // Runs, once per loop turn before its wait, what the backend put off to
  // the end of the turn: io_uring's sends, so that whatever one turn queued
  // for a connection leaves in one send (several sends of one reply, each
  // waiting for the last, meet Nagle's algorithm and the peer's delayed
  // ACK). Readiness backends write at once and have nothing to do here.
  virtual void beforeWait() {}
  // Adds or modifies the registration of `channel` to match its events().
  virtual void updateChannel(Channel* channel) = 0;
  // Removes `channel`; it must have no interest left.
  virtual void removeChannel(Channel* channel) = 0;
  // The same for a channel whose fd is closed right after and referred to by
  // nothing else (Channel::removeBeforeClose): a backend whose kernel
  // registration goes with the close may skip undoing it.
  virtual void removeChannelBeforeClose(Channel* channel) { removeChannel(channel); }

  // The strategy of a new connection on this loop (see ConnectionIo).
  [[nodiscard]] virtual ConnectionIo::Ptr newConnectionIo(const ConnectionIo::Parts& parts) = 0;
  // The strategy of a listening socket on this loop (see AcceptorIo).
  [[nodiscard]] virtual std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner,
                                                                  int listenFd) = 0;
  // Strategies still registered for completions: a connection's from its
  // start() until the last operation in flight after release() completes,
  // an acceptor's from its start() until it is destroyed. A loop being
  // destroyed turns the poller until none is left (bounded), so that closed
  // connections' cancels and closes complete. Readiness backends have none.
  [[nodiscard]] virtual size_t ownersInFlight() const { return 0; }

  [[nodiscard]] virtual PollerKind kind() const = 0;

 protected:
  EventLoopBase* ownerLoop_;
};

}  // namespace libnet
