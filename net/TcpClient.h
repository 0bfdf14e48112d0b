// TcpClient: one outgoing connection to one server, made by a Connector
// (non-blocking connect, retried with capped exponential backoff). With
// enableRetry(), a connection that closes is re-established. A failed connect
// attempt is reported to the connect-error callback, if one is set; without
// one, failures are only logged and retried.
//
// Construct and destroy it on its loop's thread. connect(), disconnect(),
// stop() and connection() may be called from any thread. Callbacks run on the
// loop thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/InetAddress.h"

namespace libnet {

class ConnectionLayer;
class Connector;
class EventLoop;

class TcpClient {
 public:
  TcpClient(EventLoop* loop, const InetAddress& serverAddr, std::string name);
  ~TcpClient();
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  // Starts connecting (and retrying until connected or stopped).
  void connect();
  // Half-closes the current connection once its output drains; no reconnect.
  void disconnect();
  // Stops connecting (an established connection is left alone).
  void stop();

  // Reconnect after the connection closes.
  void enableRetry() { retry_ = true; }
  [[nodiscard]] bool retry() const { return retry_; }
  void setRetryDelays(Duration initial, Duration max);
  void setTcpNoDelay(bool on) { tcpNoDelay_ = on; }

  [[nodiscard]] TcpConnectionPtr connection() const;
  [[nodiscard]] EventLoop* getLoop() const { return loop_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] int connectAttempts() const;

  void setConnectionCallback(ConnectionCallback cb) { connectionCallback_ = std::move(cb); }
  void setMessageCallback(MessageCallback cb) { messageCallback_ = std::move(cb); }
  void setWriteCompleteCallback(WriteCompleteCallback cb) {
    writeCompleteCallback_ = std::move(cb);
  }
  // Called on the loop thread after every failed connect attempt, with its
  // errno (ECONNREFUSED, ETIMEDOUT, ENETUNREACH, EACCES, ...), once the
  // attempt's socket is closed and before the retry is scheduled; not once
  // stop() has taken effect on the loop thread. Retrying goes on as without
  // the callback unless it calls stop(), which cancels the retry. An error
  // that retrying cannot cure (EACCES, EINVAL, EAFNOSUPPORT, ...) is reported
  // the same way and ends the attempts by itself. Do not destroy the client
  // from inside the callback; stop() it there and destroy it afterwards (e.g.
  // from a queueInLoop() functor). Set it before connect().
  void setConnectErrorCallback(ConnectErrorCallback cb);
  // Before connect(): a layer between the connection and its backend (TLS:
  // std::make_shared<TlsLayer>(context, "host.name"), net/tls/). The
  // connection (up) callback runs once the handshake is done; a connection
  // whose handshake fails is reported to the connect-error callback with
  // EPROTO (the layer logs why) and, with retry on, made again.
  void setConnectionLayer(std::shared_ptr<const ConnectionLayer> layer) {
    layer_ = std::move(layer);
  }

 private:
  void newConnection(UniqueFd sockfd);
  void removeConnection(const TcpConnectionPtr& conn);

  EventLoop* loop_;
  std::shared_ptr<Connector> connector_;
  const std::string name_;
  ConnectionCallback connectionCallback_;
  MessageCallback messageCallback_;
  WriteCompleteCallback writeCompleteCallback_;
  ConnectErrorCallback connectErrorCallback_;  // also held by the connector
  std::shared_ptr<const ConnectionLayer> layer_;
  std::atomic<bool> retry_{false};
  std::atomic<bool> connect_{false};
  bool tcpNoDelay_ = false;
  uint64_t nextConnId_ = 1;
  mutable Mutex mutex_;
  TcpConnectionPtr connection_ LIBNET_GUARDED_BY(mutex_);
};

}  // namespace libnet
