// AcceptorIo: how a listening socket's connections are taken on the loop's
// backend, the Acceptor's I/O strategy, made by the loop's Poller
// (Poller::newAcceptorIo). The epoll strategy waits for readable edges and
// lets the Acceptor drain accept4(2); the io_uring strategy keeps one
// multishot accept in flight. The Acceptor keeps the socket, the callback
// and the spare fd for running out of fds, in one place for both.
//
// Owned by its Acceptor (which outlives it). Made with the Acceptor, on the
// thread that creates it (a server's own thread for a per-loop acceptor),
// without touching the loop; from start() on, loop thread only. Part of the
// library's inside, not of its API.
#pragma once

#include <functional>
#include <optional>

#include "base/UniqueFd.h"
#include "net/SocketAddress.h"

namespace libnet {

class AcceptorIo {
 public:
  class Owner {
   public:
    // A connection was accepted (non-blocking, close-on-exec), with its
    // peer's address where the accept reported it.
    virtual void onAccepted(UniqueFd fd, const std::optional<SocketAddress>& peer) = 0;
    // accept4(2) until the backlog is empty (dropping connections through the
    // spare fd while out of fds), or a bounded batch with the rest taken
    // through resume() on the next turn; true if any connection was accepted.
    virtual bool acceptPending() = 0;
    // Out of fds: accept one pending connection through the spare fd and
    // close it; false if there was none, or if the spare is gone for now
    // (taken by another thread: the owner then calls resume() a little
    // later, until it has the spare back).
    virtual bool dropOneForFdLimit() = 0;
    // The listening address, for log lines.
    [[nodiscard]] virtual SocketAddress listenAddress() const = 0;

   protected:
    ~Owner() = default;
  };

  AcceptorIo() = default;
  virtual ~AcceptorIo() = default;
  AcceptorIo(const AcceptorIo&) = delete;
  AcceptorIo& operator=(const AcceptorIo&) = delete;

  // The socket is listening: start taking connections.
  virtual void start() = 0;
  // After dropOneForFdLimit() found no spare, or after acceptPending()
  // stopped at its batch limit: take the pending connections now (a bounded
  // batch through Owner::acceptPending(), the rest on the next turn), since
  // no new readiness or completion may come for them.
  virtual void resume() = 0;
  // Stop taking connections (draining): `stopped` runs on the loop once no
  // accept is in flight any more; every connection the kernel handed over
  // before that has gone to Owner::onAccepted(). What is still in the
  // backlog is left to the owner. At most once.
  virtual void stop(std::function<void()> stopped) = 0;
};

}  // namespace libnet
