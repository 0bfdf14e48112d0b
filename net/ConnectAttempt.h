// ConnectAttempt: one non-blocking connect() to one address, watched by a
// Channel until it completes, for HappyEyeballs (which races several). Its
// two steps, begin() (socket() and connect(), the errno classified) and
// outcome() (what a completed connect came to), are also what Connector does
// for each of its attempts.
//
// Held by std::shared_ptr: its Channel is tied to it, so an attempt dropped
// by its owner during an event dispatch is not reached afterwards. Loop
// thread only.
#pragma once

#include <functional>
#include <memory>

#include "base/UniqueFd.h"
#include "net/InetAddress.h"
#include "net/SocketAddress.h"

namespace libnet {

class Channel;
class EventLoop;

class ConnectAttempt : public std::enable_shared_from_this<ConnectAttempt> {
 public:
  // A connect() just made: `fd` is connecting (error 0), or `error` says why
  // it failed at once (`fd` is then closed); `permanent` when retrying
  // cannot cure that (EACCES, EINVAL, EAFNOSUPPORT, ...).
  struct Begun {
    UniqueFd fd;
    int error = 0;
    bool permanent = false;
  };
  // socket() and a non-blocking connect() to `server` (TCP or Unix). Logs
  // what failed.
  [[nodiscard]] static Begun begin(const SocketAddress& server);
  // The result of a connect the poller reported writable or in error: 0
  // (connected) or its errno. A TCP socket connected to itself (possible
  // only when nothing listens on the port) counts as ECONNREFUSED.
  [[nodiscard]] static int outcome(int fd, const SocketAddress& server);

  // Runs once, on the loop, with 0 (the socket is connected: takeFd()) or
  // the errno; never after cancel() or from inside start().
  using DoneCallback = std::function<void(ConnectAttempt& attempt, int error)>;

  // Starts connecting to `server`. If connect() failed at once, error() says
  // why and `done` never runs.
  [[nodiscard]] static std::shared_ptr<ConnectAttempt> start(EventLoop* loop,
                                                             const InetAddress& server,
                                                             DoneCallback done);
  ~ConnectAttempt();
  ConnectAttempt(const ConnectAttempt&) = delete;
  ConnectAttempt& operator=(const ConnectAttempt&) = delete;

  [[nodiscard]] const InetAddress& address() const { return address_; }
  // Nonzero when the attempt failed inside start().
  [[nodiscard]] int error() const { return begun_.error; }
  [[nodiscard]] bool permanent() const { return begun_.permanent; }
  // The connected socket, once `done` has reported 0.
  [[nodiscard]] UniqueFd takeFd() { return std::move(begun_.fd); }
  // Abandons the attempt: its socket is closed now and `done` never runs.
  void cancel();

 private:
  struct Private {};

 public:
  ConnectAttempt(Private, EventLoop* loop, const InetAddress& server, DoneCallback done);

 private:
  void watch();
  void completed(bool errorEvent);
  // Unregisters the channel; its destruction waits until the current event
  // dispatch is over, which may still hold it.
  void unwatch();

  EventLoop* loop_;
  const InetAddress address_;
  DoneCallback done_;
  Begun begun_;
  std::shared_ptr<Channel> channel_;
};

}  // namespace libnet
