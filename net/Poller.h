// Poller: the I/O backend of one EventLoop. It reports readiness of Channels
// with edge-triggered semantics (a channel is reported when its fd becomes
// ready, and its handler drains it), and it hands out the I/O strategies
// through which connections and acceptors of its loop move bytes
// (newConnectionIo / newAcceptorIo), made by the IoFactory that came with
// it. A backend is one Poller, one ConnectionIo, one AcceptorIo and one DatagramIo under
// net/poller/; nothing else in net/ knows which one runs. Made, with its
// IoFactory, by the factory in net/poller/PollerFactory.h, which is where a
// backend's poller and strategies meet (neither knows the other); owned by
// its loop (EventLoopBase::poller_, set by EventLoop's constructor). Loop thread only, except
// newConnectionIo() and newAcceptorIo(): the thread that creates a connection or acceptor for this
// loop calls them, and they register nothing (the strategy's start() does,
// on the loop).
//
// Posting a file descriptor from one loop's poller to another's (an
// accepting loop handing a connection to an I/O loop) without the target
// loop's queue, where the backends can: on io_uring, a message from this
// ring to the target's (IORING_OP_MSG_RING), which leaves with this loop's
// next submission and wakes the target by itself; no lock, no eventfd, no
// system call of its own. canPostTo() says whether it can; a backend that
// cannot (epoll) keeps the defaults below, and the caller uses the target
// loop's queue instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/Timestamp.h"
#include "base/UniqueFd.h"
#include "net/AcceptorIo.h"
#include "net/ConnectionIo.h"
#include "net/DatagramIo.h"
#include "net/PollerKind.h"

namespace libnet {

class Channel;
class EventLoopBase;

class Poller {
 public:
  using ChannelList = std::vector<Channel*>;

  // What receives the fds other loops post to this poller (postFd()). Called
  // on this poller's loop thread, in the event phase.
  class FdReceiver {
   public:
    // `fd` is now the receiver's.
    virtual void onFdPosted(UniqueFd fd) = 0;

   protected:
    ~FdReceiver() = default;
  };

  // Makes a backend's I/O strategies for one loop. Any thread (see
  // newConnectionIo()); it must not touch the loop until start().
  class IoFactory {
   public:
    virtual ~IoFactory() = default;
    [[nodiscard]] virtual ConnectionIo::Ptr newConnectionIo(const ConnectionIo::Parts& parts) = 0;
    [[nodiscard]] virtual std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner,
                                                                    int listenFd) = 0;
    [[nodiscard]] virtual std::unique_ptr<DatagramIo> newDatagramIo(DatagramIo::Params params) = 0;
  };

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
  [[nodiscard]] ConnectionIo::Ptr newConnectionIo(const ConnectionIo::Parts& parts) {
    return ioFactory_->newConnectionIo(parts);
  }
  // The strategy of a listening socket on this loop (see AcceptorIo).
  [[nodiscard]] std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner, int listenFd) {
    return ioFactory_->newAcceptorIo(owner, listenFd);
  }
  // The strategy of a datagram socket on this loop (see DatagramIo); loop
  // thread.
  [[nodiscard]] std::unique_ptr<DatagramIo> newDatagramIo(DatagramIo::Params params) {
    return ioFactory_->newDatagramIo(std::move(params));
  }
  // The backend's factory (net/poller/PollerFactory.cc) gives the poller its
  // strategies' factory once, on the loop's thread, before the loop is
  // handed to anyone.
  void setIoFactory(std::unique_ptr<IoFactory> factory) { ioFactory_ = std::move(factory); }
  // Strategies still registered for completions: a connection's from its
  // start() until the last operation in flight after release() completes,
  // an acceptor's from its start() until it is destroyed. A loop being
  // destroyed turns the poller until none is left (bounded), so that closed
  // connections' cancels and closes complete. Readiness backends have none.
  [[nodiscard]] virtual size_t ownersInFlight() const { return 0; }

  [[nodiscard]] virtual PollerKind kind() const = 0;

  // Posting fds between loops (see the top of this file).
  //
  // This loop's thread: makes `receiver` reachable by other loops' postFd()
  // and returns the token they name it with, or 0 if this backend takes no
  // posts. The receiver must outlive its registration.
  [[nodiscard]] virtual uint64_t addFdReceiver(FdReceiver* /*receiver*/) { return 0; }
  // This loop's thread: the receiver is called no more; an fd posted to it
  // that arrives later is closed here, on arrival.
  virtual void removeFdReceiver(uint64_t /*token*/) {}
  // This loop's thread: whether postFd() from this poller can reach
  // `target`, another loop's poller (which may be read, not changed, from
  // here). False unless both backends can, and never for this poller itself.
  [[nodiscard]] virtual bool canPostTo(const Poller& /*target*/) const { return false; }
  // This loop's thread, only where canPostTo(target): hands `fd` to the
  // receiver `token` of `target`, which gets it on its own thread. The post
  // leaves with this loop's next submission (its next turn, or
  // flushPosts()); `target`'s loop must not be destroyed before that. From
  // then on the fd is never lost: a post the kernel refuses comes back here
  // and the fd is closed (logged), one that reaches a removed receiver is
  // closed there, and a loop being destroyed turns its poller (bounded, as
  // for its operations in flight) until the posts that reached it have
  // arrived.
  virtual void postFd(Poller& /*target*/, uint64_t /*token*/, UniqueFd /*fd*/) {}
  // This loop's thread: submits the posts made so far now, rather than
  // with the next turn (for an owner that is about to destroy their target
  // loops while this loop does not run).
  virtual void flushPosts() {}

 protected:
  EventLoopBase* ownerLoop_;

 private:
  std::unique_ptr<IoFactory> ioFactory_;
};

}  // namespace libnet
