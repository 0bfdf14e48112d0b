// Acceptor: a listening socket on a loop; hands each accepted connection's fd
// to the new-connection callback. How connections are taken depends on the
// loop's backend (its AcceptorIo: readable edges then accept4(2) until
// EAGAIN on epoll, one multishot accept on io_uring); the rest is here, the
// same for both. Owned by a TcpServer (its one acceptor, or one per I/O loop
// in per-loop accept mode), which constructs, configures and listen()s it on
// the server's thread; from listen() on it runs on its loop's thread only,
// and is destroyed there.
//
// Running out of fds (EMFILE/ENFILE) must not wedge the listener: with
// edge-triggered polling an unaccepted connection would never be reported
// again, and with level-triggered polling it would spin. So a spare fd is
// held open; on EMFILE it is closed, the connection accepted and closed at
// once (the peer sees a clean close instead of hanging), and the spare
// reopened.
//
// A Unix listener bound to a path handles the socket file deliberately
// (UnixSocketFile: a stale file removed before bind, a live server's or a
// non-socket's path refused, the mode set, the file removed with the
// acceptor), and listens from the constructor on.
//
// The spare is one for the whole process, shared by every Acceptor (and
// open while any exists), because the fd table it stands in is: with
// several acceptors on several threads (per-loop accept), the fd one of them
// frees for a moment can be taken by another's accept, or by any other
// thread, and a spare per acceptor would be lost for good that way (and
// with it the means to drop connections: they would hang in the backlog).
// So the drop runs under the spare's lock; an acceptor that accepts a
// connection while the spare is missing tries to reopen it, and, still out
// of fds, keeps that connection's fd as the spare instead (shut down, so its
// peer sees the close). An acceptor that finds the spare missing with
// connections pending (the fd went to some other part of the process)
// retries on a timer, every kStalledRetry, until it has the spare back: no
// pending connection waits for the next one to arrive, and the loop does
// not spin.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "base/Timestamp.h"
#include "base/UniqueFd.h"
#include "net/AcceptorIo.h"
#include "net/Socket.h"
#include "net/SocketAddress.h"
#include "net/TimerId.h"

namespace libnet {

class EventLoop;
class UnixSocketFile;

class Acceptor : private AcceptorIo::Owner {
 public:
  // `peer` is the peer's address where the accept reported it (epoll's
  // accept4); io_uring's multishot accept reports none (nullopt), and the
  // connection looks it up if and when it is asked for.
  using NewConnectionCallback =
      std::function<void(UniqueFd sockfd, const std::optional<SocketAddress>& peer)>;

  // Out of fds with the spare taken elsewhere, how long an acceptor waits
  // before it tries again.
  static constexpr Duration kStalledRetry = std::chrono::milliseconds(20);

  // Creates and binds the socket: throws std::system_error (port in use,
  // permission denied, address not available) with the address in the message.
  // On a Unix socket, `reusePort` is ignored (the kernel has no such thing
  // for it) and `unixFileMode`, if any, is the mode of a path's socket file.
  Acceptor(EventLoop* loop, const SocketAddress& listenAddr, bool reusePort,
           std::optional<mode_t> unixFileMode = std::nullopt);
  // Adopts a socket that is already bound and listening (inherited:
  // net/ListenFds.h), made non-blocking here. A Unix socket's file is not
  // ours (we did not create it): it is left in place when we go. Throws
  // std::system_error if it is not a socket.
  Acceptor(EventLoop* loop, UniqueFd listening);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  void setNewConnectionCallback(NewConnectionCallback cb) { callback_ = std::move(cb); }
  // Starts listening; throws std::system_error on failure. Any thread: the
  // socket listens at once, and taking connections starts on the loop.
  void listen();
  // Before listen(): TCP_DEFER_ACCEPT (see TcpServer::Options::deferAccept); throws
  // std::system_error if the kernel refuses. Nothing on a Unix socket.
  void setDeferAccept(int seconds);
  // Before listen(): TCP_NODELAY on the listening socket, which Linux copies
  // to every socket accepted from it (one setsockopt instead of one per
  // connection). Nothing on a Unix socket.
  void setTcpNoDelay(bool on) { socket_.setTcpNoDelay(on); }
  // Draining, loop thread, after listen(): stops taking connections, takes
  // what is already in the backlog (the kernel completed those handshakes:
  // closing the socket would reset them), then runs `stopped`. Every
  // connection so accepted goes to the callback first. The socket itself is
  // closed with the Acceptor (never shut down: another process may share
  // it), which `stopped` may have destroyed later, not from inside it.
  void stopAccepting(std::function<void()> stopped);
  // The bound address, with the real port when port 0 was asked for.
  [[nodiscard]] SocketAddress localAddress() const { return Socket::localAddress(socket_.fd()); }
  // The listening socket, borrowed (to be passed on to a successor).
  [[nodiscard]] int fd() const { return socket_.fd(); }

 private:
  // AcceptorIo::Owner
  void onAccepted(UniqueFd fd, const std::optional<SocketAddress>& peer) override;
  bool acceptPending() override;
  bool dropOneForFdLimit() override;
  [[nodiscard]] SocketAddress listenAddress() const override { return localAddress(); }

  // The constructor's part for a Unix socket: the file, bind, mode, listen.
  void bindUnix(const SocketAddress& listenAddr, std::optional<mode_t> fileMode);
  // Out of fds and no spare to drop connections with: try again later.
  void retryLater();
  // stopAccepting(): accept4(2) until the backlog is empty.
  void acceptBacklog();
  // acceptPending() stopped at kMaxAcceptsPerCall: go on next turn.
  void continueLater();

  // Connections taken per acceptPending(): a storm of connects that
  // outpaces the loop must not keep it in accept4() while its connections
  // wait (and, in per-loop accept, while ~TcpServer waits for it to stop
  // accepting, seen to take seconds under TSan).
  static constexpr int kMaxAcceptsPerCall = 128;

  EventLoop* loop_;
  const bool unix_;
  Socket socket_;
  std::unique_ptr<UnixSocketFile> file_;  // bound to a path
  NewConnectionCallback callback_;
  bool listening_ = false;
  const bool adopted_ = false;  // listening already (the second constructor)
  bool stopping_ = false;       // stopAccepting()
  std::unique_ptr<AcceptorIo> io_;
  TimerId retryTimer_;              // while stalled (see kStalledRetry)
  TimerId continueTimer_;           // continueLater()
  bool stalled_ = false;            // from the first retry until the spare is back
  uint64_t droppedForFdLimit_ = 0;  // connections closed for want of fds
};

}  // namespace libnet
