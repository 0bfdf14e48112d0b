// Connector: makes a non-blocking connect() to one server address (TCP, or
// a Unix socket's path or abstract name) and hands
// the connected fd to a callback; on failure it retries after a delay that
// doubles from initialRetryDelay up to maxRetryDelay. Used by TcpClient.
//
// Every failed attempt is also reported to the connect-error callback with
// its errno, before the retry is scheduled; an error that retrying cannot
// cure (EACCES, EINVAL, EAFNOSUPPORT, ...) is reported the same way and ends
// the attempts, as stop() would.
//
// Made with a HappyEyeballs::Request instead of an address, it connects by
// name: each attempt is a Happy Eyeballs round (net/HappyEyeballs.h), the
// name looked up again every time; a failed round is reported to the
// connect-failure callback with all its errors, then to the connect-error
// callback with ConnectFailure::error().
//
// Held by std::shared_ptr: retry timers hold only a weak_ptr to it.
// start() and stop() may be called from any thread, restart() from the loop
// thread; the callbacks run on the loop thread. Set the callbacks before
// start().
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/Duration.h"
#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/ConnectFailure.h"
#include "net/HappyEyeballs.h"
#include "net/SocketAddress.h"
#include "net/TimerId.h"

namespace libnet {

class Channel;
class EventLoop;

class Connector : public std::enable_shared_from_this<Connector> {
 public:
  using NewConnectionCallback = std::function<void(UniqueFd sockfd)>;

  static constexpr Duration kInitialRetryDelay = std::chrono::milliseconds(500);
  static constexpr Duration kMaxRetryDelay = std::chrono::seconds(30);

  // Retries after `initialRetryDelay`, doubling up to `maxRetryDelay`; throws
  // std::invalid_argument unless 0 < initialRetryDelay <= maxRetryDelay.
  Connector(EventLoop* loop, const SocketAddress& serverAddr,
            Duration initialRetryDelay = kInitialRetryDelay,
            Duration maxRetryDelay = kMaxRetryDelay);
  // By name; also throws what HappyEyeballs::check() throws.
  Connector(EventLoop* loop, HappyEyeballs::Request byName, Duration initialRetryDelay,
            Duration maxRetryDelay);
  ~Connector();
  Connector(const Connector&) = delete;
  Connector& operator=(const Connector&) = delete;

  void setNewConnectionCallback(NewConnectionCallback cb) { callback_ = std::move(cb); }
  // Called on the loop thread after each failed attempt, once its socket is
  // closed and before the next attempt is scheduled; not once stop() has
  // taken effect on the loop thread. The callback may call stop() (no attempt
  // follows) or start() (the next attempt starts once it has returned).
  void setConnectErrorCallback(ConnectErrorCallback cb) { errorCallback_ = std::move(cb); }
  // By name: called before the connect-error callback with every error of
  // the round.
  void setConnectFailureCallback(ConnectFailureCallback cb) { failureCallback_ = std::move(cb); }

  void start();    // any thread; the attempt starts from the loop's queue
  void restart();  // loop thread: start over with the initial delay
  void stop();     // any thread: no more attempts; abandons one in progress

  // "host:port" by name, else the server address.
  [[nodiscard]] std::string target() const;
  // What to report when a connection to the target was made but its layer
  // closed it before it was up (TcpConnection::layerFailure(): `reason`).
  [[nodiscard]] ConnectFailure layerFailure(std::string reason) const;
  // Attempts made so far (for tests and diagnostics).
  [[nodiscard]] int attempts() const { return attempts_.load(); }

 private:
  enum class State { kDisconnected, kConnecting, kConnected };

  void startInLoop();
  void stopInLoop();
  void connect();
  void connecting(UniqueFd fd);
  void handleWrite();
  void handleError();
  void failed(UniqueFd fd, int error, bool permanent);
  void retry();
  UniqueFd removeAndResetChannel();
  void connectByName();
  void failedByName(const ConnectFailure& failure);

  EventLoop* loop_;
  const SocketAddress serverAddr_;
  std::atomic<bool> connect_{false};
  State state_ = State::kDisconnected;
  UniqueFd connectingFd_;
  std::unique_ptr<Channel> channel_;
  NewConnectionCallback callback_;
  ConnectErrorCallback errorCallback_;
  const Duration initialRetryDelay_;
  const Duration maxRetryDelay_;
  Duration retryDelay_;
  TimerId retryTimer_;
  std::atomic<int> attempts_{0};
  // By name: the request each round is made from, and the round under way.
  std::optional<HappyEyeballs::Request> byName_;
  std::shared_ptr<HappyEyeballs> round_;
  ConnectFailureCallback failureCallback_;
};

}  // namespace libnet
