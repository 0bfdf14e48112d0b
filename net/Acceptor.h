// Acceptor: a listening socket on a loop; accepts every pending connection
// when it becomes readable (edge-triggered: until EAGAIN) and hands each fd to
// the new-connection callback. On an io_uring loop it uses one multishot
// accept instead, re-armed whenever a completion comes without F_MORE.
// Owned by TcpServer; loop thread only.
//
// Running out of fds (EMFILE/ENFILE) must not wedge the listener: with
// edge-triggered polling an unaccepted connection would never be reported
// again, and with level-triggered polling it would spin. So one spare fd is
// held open; on EMFILE it is closed, the connection accepted and closed at
// once (the peer sees a clean close instead of hanging), and the spare
// reopened.
#pragma once

#include <cstdint>
#include <functional>

#include "base/UniqueFd.h"
#include "net/Channel.h"
#include "net/InetAddress.h"
#include "net/Socket.h"
#include "net/poller/CompletionHandler.h"

namespace libnet {

class EventLoop;
class UringPoller;

class Acceptor : private CompletionHandler {
 public:
  using NewConnectionCallback = std::function<void(UniqueFd sockfd, const InetAddress& peer)>;

  // Creates and binds the socket: throws std::system_error (port in use,
  // permission denied, address not available) with the address in the message.
  Acceptor(EventLoop* loop, const InetAddress& listenAddr, bool reusePort);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  void setNewConnectionCallback(NewConnectionCallback cb) { callback_ = std::move(cb); }
  // Starts listening; throws std::system_error on failure.
  void listen();
  [[nodiscard]] bool listening() const { return listening_; }
  // The bound address, with the real port when port 0 was asked for.
  // Before listen(): TCP_NODELAY on the listening socket, which Linux copies
  // to every socket accepted from it (one setsockopt instead of one per
  // connection).
  void setTcpNoDelay(bool on) { socket_.setTcpNoDelay(on); }
  [[nodiscard]] InetAddress localAddress() const { return Socket::localAddress(socket_.fd()); }
  // Connections closed at once because the process was out of fds.
  [[nodiscard]] uint64_t droppedForFdLimit() const { return droppedForFdLimit_; }

 private:
  void handleRead();
  // accept4() until EAGAIN; returns whether any connection was delivered.
  bool drainAccepts();
  void onCompletion(UringOp op, int32_t res, uint32_t flags) override;
  void armAccept();
  void deliver(UniqueFd fd, const InetAddress& peer);
  // Returns false if the spare fd could not be used (stop accepting for now).
  bool dropOneForFdLimit();

  EventLoop* loop_;
  Socket socket_;
  Channel channel_;
  NewConnectionCallback callback_;
  bool listening_ = false;
  UniqueFd spareFd_;
  UringPoller* uring_;
  uint64_t uringToken_ = 0;
  bool acceptArmed_ = false;
  uint64_t droppedForFdLimit_ = 0;
};

}  // namespace libnet
