// Poller: the I/O backend of one EventLoop. It reports readiness of Channels
// with edge-triggered semantics (a channel is reported when its fd becomes
// ready, and its handler drains it), and it makes the I/O strategies through
// which connections and acceptors of its loop move bytes
// (newConnectionIo / newAcceptorIo). A backend is one Poller, one
// ConnectionIo and one AcceptorIo under net/poller/; nothing else in net/
// knows which one runs. Owned by the EventLoop (unique_ptr); loop thread
// only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/Timestamp.h"
#include "net/AcceptorIo.h"
#include "net/ConnectionIo.h"
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
  // Runs what else the last poll() brought (completions), in the same phase
  // as the channel callbacks. Readiness backends have nothing to do here.
  virtual void dispatchCompletions() {}
  // Adds or modifies the registration of `channel` to match its events().
  virtual void updateChannel(Channel* channel) = 0;
  // Removes `channel`; it must have no interest left.
  virtual void removeChannel(Channel* channel) = 0;
  // The same for a channel whose fd is closed right after and referred to by
  // nothing else (Channel::removeBeforeClose): a backend whose kernel
  // registration goes with the close may skip undoing it.
  virtual void removeChannelBeforeClose(Channel* channel) { removeChannel(channel); }

  // The strategy of a new connection on this loop (see ConnectionIo).
  [[nodiscard]] virtual std::unique_ptr<ConnectionIo> newConnectionIo(
      const ConnectionIo::Parts& parts) = 0;
  // The strategy of a listening socket on this loop (see AcceptorIo).
  [[nodiscard]] virtual std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner,
                                                                  int listenFd) = 0;
  // Owners (connections, acceptors) that still have operations in flight:
  // a loop being destroyed turns the poller until none is left (bounded),
  // so that closed connections release their fds. Readiness backends have
  // none.
  [[nodiscard]] virtual size_t ownersInFlight() const { return 0; }

  [[nodiscard]] virtual PollerKind kind() const = 0;

  // Creates the backend for `kind`, after the LIBNET_POLLER environment
  // variable (epoll, uring, auto) has overridden it. kAuto picks io_uring if
  // the probe passes and this loop's ring can be built, else epoll, with one
  // log line saying why (the first time); kIoUring where io_uring cannot run
  // throws std::system_error naming the failed call. Defined with the
  // backends, in net/poller/DefaultPoller.cc.
  static std::unique_ptr<Poller> create(EventLoop* loop, PollerKind kind);
  // The kind create() would try first for `kind` (environment applied, kAuto
  // resolved by the probe and by earlier loops' ring failures).
  static PollerKind resolve(PollerKind kind);
  // Why a loop asked for `kind` cannot run here ("io_uring unavailable: ..."
  // with the probe's reason), or "" if it can as far as the probe can tell
  // (kEpoll and kAuto always can; environment applied as in resolve()).
  [[nodiscard]] static std::string unavailableReason(PollerKind kind);

 protected:
  EventLoop* ownerLoop_;
};

}  // namespace libnet
