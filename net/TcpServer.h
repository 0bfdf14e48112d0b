// TcpServer: accepts connections on its loop and hands each to a loop of its
// EventLoopThreadPool, round-robin (0 threads: all on the accepting loop).
// It keeps every live connection in a map and tears them down when destroyed.
//
// Construct, start() and destroy it on its loop's thread. Binding happens in
// the constructor, so "port in use" or "permission denied" surfaces there as
// std::system_error; listen() failures surface from start().
// Callbacks run on the connection's loop thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/InetAddress.h"

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
  void newConnection(UniqueFd sockfd, const InetAddress& peerAddr);
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
  bool started_ = false;
  uint64_t nextConnId_ = 1;
  std::unordered_map<TcpConnection*, TcpConnectionPtr> connections_;
  // Expires when the server dies. Close callbacks run on I/O threads and hop
  // back to this loop; they touch the server only if this is still alive, and
  // check it on this loop's thread, the thread that destroys the server.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace libnet
