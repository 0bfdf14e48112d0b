// TcpServer: accepts connections on its loop and hands each to a loop of its
// EventLoopThreadPool, round-robin (0 threads: all on the accepting loop).
// It keeps every live connection in a map and tears them down when destroyed.
//
// Construct, start() and destroy it on its loop's thread. Binding happens in
// the constructor, so "port in use" or "permission denied" surfaces there as
// std::system_error; listen() failures surface from start().
// Callbacks run on the connection's loop thread.
//
// Idle timeout (setIdleTimeout, off by default): each I/O loop gets one
// TimingWheel, built in start() and destroyed on its own loop after the last
// connection of that loop has left it. Every connection joins its loop's
// wheel when established, is touched whenever bytes arrive and whenever
// queued output makes progress (on either backend), and leaves it when
// destroyed; one with no progress either way for the timeout is closed
// (forceClose(), or the idle callback). So a slow reader of a long download
// is not idle, and a reader that has stopped reading is.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/InetAddress.h"
#include "net/TimingWheel.h"

namespace libnet {

class Acceptor;
class EventLoop;
class EventLoopThreadPool;
class TcpConnection;

class TcpServer {
 public:
  using ThreadInitCallback = std::function<void(EventLoop*)>;
  enum class Option { kNoReusePort, kReusePort };

  TcpServer(EventLoop* loop, const InetAddress& listenAddr, std::string name,
            Option option = Option::kNoReusePort);
  ~TcpServer();
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] EventLoop* getLoop() const { return loop_; }
  // The bound address (the real port when port 0 was asked for).
  [[nodiscard]] InetAddress listenAddress() const;

  // Before start(): number of I/O loop threads (0: all on this loop).
  void setThreadNum(int numThreads);
  void setThreadInitCallback(ThreadInitCallback cb) { threadInitCallback_ = std::move(cb); }
  // TCP_NODELAY on every accepted connection.
  void setTcpNoDelay(bool on) { tcpNoDelay_ = on; }
  // Back-pressure for every connection (TcpConnection::setMaxQueuedOutput):
  // reading from a peer pauses while more than `bytes` of output wait for
  // it, and resumes once half has drained; 0 turns it off. Default:
  // TcpConnection::kDefaultMaxQueuedOutput (64 MiB).
  void setMaxQueuedOutput(size_t bytes) { maxQueuedOutput_ = bytes; }
  // Before start(): close a connection once nothing has moved on it (no
  // byte received, no queued byte written) for `timeout`; it is closed
  // between `timeout` and `timeout + tick` after the last progress. Zero turns it off (the
  // default); when off, the read path pays one predictable branch. Throws std::invalid_argument for
  // a negative timeout, or (timeout on) a tick that is not positive or more than
  // TimingWheel::kMaxBuckets - 1 times shorter than the timeout.
  void setIdleTimeout(Duration timeout, Duration tick = std::chrono::seconds(1));
  // Before start(): called on the connection's loop for an idle connection,
  // instead of conn->forceClose() (say, to log, or to send a goodbye and
  // shutdown()). A connection it leaves open comes round again one timeout
  // later.
  void setIdleCallback(TimingWheel::ExpireCallback cb) { idleCallback_ = std::move(cb); }

  // Starts the I/O threads and listens. Idempotent. Loop thread only.
  void start();

  void setConnectionCallback(ConnectionCallback cb) { connectionCallback_ = std::move(cb); }
  void setMessageCallback(MessageCallback cb) { messageCallback_ = std::move(cb); }
  void setWriteCompleteCallback(WriteCompleteCallback cb) {
    writeCompleteCallback_ = std::move(cb);
  }

  // Live connections. Loop thread only.
  [[nodiscard]] size_t connectionCount() const;

 private:
  void newConnection(UniqueFd sockfd, const std::optional<InetAddress>& peerAddr);
  void removeConnection(const TcpConnectionPtr& conn);

  EventLoop* loop_;
  const std::string name_;
  std::unique_ptr<Acceptor> acceptor_;
  std::unique_ptr<EventLoopThreadPool> threadPool_;
  ConnectionCallback connectionCallback_;
  MessageCallback messageCallback_;
  WriteCompleteCallback writeCompleteCallback_;
  ThreadInitCallback threadInitCallback_;
  bool tcpNoDelay_ = false;
  std::optional<size_t> maxQueuedOutput_;      // unset: the connection's default
  bool noDelayInherited_ = false;              // set on the listening socket
  InetAddress listenAddr_;                     // as bound (real port), set in start()
  Duration idleTimeout_{};
  Duration idleTick_{};
  TimingWheel::ExpireCallback idleCallback_;
  // One per I/O loop while the idle timeout is on. Used on that loop only
  // (the server's thread reads the map, never a wheel); see ~TcpServer.
  std::unordered_map<EventLoop*, std::unique_ptr<TimingWheel>> idleWheels_;
  bool started_ = false;
  uint64_t nextConnId_ = 1;
  std::unordered_map<TcpConnection*, TcpConnectionPtr> connections_;
  // Expires when the server dies. Close callbacks run on I/O threads and hop
  // back to this loop; they touch the server only if this is still alive, and
  // check it on this loop's thread, the thread that destroys the server.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace libnet
