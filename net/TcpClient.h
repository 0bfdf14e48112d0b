// TcpClient: one outgoing connection to one server, made by a Connector
// (non-blocking connect, retried with capped exponential backoff). Despite
// the name, any stream socket: TCP to an IPv4 or IPv6 address, or a Unix
// domain socket (SocketAddress::unixPath / unixAbstract); a Unix path that
// does not exist yet is retried like a refused TCP connect. Given
// "host:port", it connects by name: each attempt is a Happy Eyeballs round
// (net/HappyEyeballs.h) through Options::resolver, the name looked up again
// for every round, so a retry follows the name to new addresses. With
// Options::retry, a connection that closes is re-established. A failed
// connect attempt is reported to the connect-error callback, if one is set;
// without one, failures are only logged and retried.
//
// Configuration is the Options given to the constructor (checked there:
// std::invalid_argument). Callbacks are set before connect(); one set after
// it throws std::logic_error (a connection may already be made with the old
// one).
//
// Construct and destroy it on its loop's thread. connect(), disconnect(),
// stop() and connection() may be called from any thread. Callbacks run on the
// loop thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "base/Duration.h"
#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/ConnectFailure.h"
#include "net/NameResolver.h"
#include "net/SocketAddress.h"

namespace libnet {

class ConnectionLayer;
class Connector;
class EventLoop;

class TcpClient {
 public:
  struct Options {
    // Make the connection again after it closes (and after a failed TLS
    // handshake).
    bool retry = false;
    // A failed connect is retried after initialRetryDelay, then after twice
    // as long each time, up to maxRetryDelay. 0 < initial <= max.
    Duration initialRetryDelay = std::chrono::milliseconds(500);
    Duration maxRetryDelay = std::chrono::seconds(30);
    // TCP_NODELAY on the connection (nothing on a Unix socket).
    bool tcpNoDelay = false;
    // A layer between the connection and its backend (TLS:
    // tls::newLayer(context, "host.name"), net/tls/TlsLayer.h). The
    // connection (up) callback runs once the handshake is done; a
    // connection whose handshake fails is reported to the connect-error
    // callback with EPROTO (the layer logs why, and the connect-failure
    // callback gets it: ConnectFailure::layer) and, with retry on, made
    // again. Null: plain TCP.
    std::shared_ptr<const ConnectionLayer> layer{};
    // By name ("host:port"): looks the host up (dns::Resolver,
    // net/dns/Resolver.h); not needed for a numeric host. The Happy Eyeballs
    // delays: a new attempt beside a pending one every attemptDelay (> 0);
    // an A answer waits resolutionDelay (>= 0) for the AAAA one.
    std::shared_ptr<NameResolver> resolver{};
    Duration attemptDelay = std::chrono::milliseconds(250);
    Duration resolutionDelay = std::chrono::milliseconds(50);
  };

  TcpClient(EventLoop* loop, const SocketAddress& serverAddr, std::string name);
  // Throws std::invalid_argument for a bad option.
  TcpClient(EventLoop* loop, const SocketAddress& serverAddr, std::string name, Options options);
  // By name: "host:port", "192.0.2.1:80" or "[2001:db8::1]:80". Throws
  // std::invalid_argument for malformed text, a bad option, or a host name
  // without Options::resolver (the message names the host).
  TcpClient(EventLoop* loop, std::string_view hostPort, std::string name, Options options);
  ~TcpClient();
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  // Starts connecting (and retrying until connected or stopped).
  void connect();
  // Half-closes the current connection once its output drains; no reconnect.
  void disconnect();
  // Stops connecting (an established connection is left alone).
  void stop();

  [[nodiscard]] const Options& options() const { return options_; }

  [[nodiscard]] TcpConnectionPtr connection() const;
  [[nodiscard]] EventLoop* loop() const { return loop_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] int connectAttempts() const;

  // The names of 0.1, kept for one minor version (CHANGELOG.md). The setters
  // set their Options field before connect() (std::logic_error after it).
  [[deprecated("use Options::retry")]] void enableRetry();
  [[deprecated("use options().retry")]] [[nodiscard]] bool retry() const { return options_.retry; }
  [[deprecated("use Options::tcpNoDelay")]] void setTcpNoDelay(bool on);
  [[deprecated("use Options::layer")]] void setConnectionLayer(
      std::shared_ptr<const ConnectionLayer> layer);
  [[deprecated("use loop()")]] [[nodiscard]] EventLoop* getLoop() const { return loop_; }

  // Before connect() (std::logic_error after it).
  void setConnectionCallback(ConnectionCallback cb);
  void setMessageCallback(MessageCallback cb);
  void setWriteCompleteCallback(WriteCompleteCallback cb);
  // Called on the loop thread after every failed connect attempt, with its
  // errno (ECONNREFUSED, ETIMEDOUT, ENETUNREACH, EACCES, ...), once the
  // attempt's socket is closed and before the retry is scheduled; not once
  // stop() has taken effect on the loop thread. Retrying goes on as without
  // the callback unless it calls stop(), which cancels the retry. An error
  // that retrying cannot cure (EACCES, EINVAL, EAFNOSUPPORT, ...) is reported
  // the same way and ends the attempts by itself. Do not destroy the client
  // from inside the callback; stop() it there and destroy it afterwards (e.g.
  // from a queueInLoop() functor). Before connect() (std::logic_error after
  // it).
  void setConnectErrorCallback(ConnectErrorCallback cb);
  // By name: called after every failed round, just before the connect-error
  // callback (whose errno is ConnectFailure::error(), the one that says the
  // most), with every error of it: both lookups' and each attempt's address
  // and errno. By name or by address: called, just before the connect-error
  // callback's EPROTO, when Options::layer closed a connection before it was
  // up, with ConnectFailure::layer saying why (a TLS client's "certificate
  // verify failed: hostname mismatch"). Otherwise a client made with an
  // address does not call it. Before connect() (std::logic_error after it).
  void setConnectFailureCallback(ConnectFailureCallback cb);

 private:
  TcpClient(EventLoop* loop, std::string name, Options options,
            std::shared_ptr<Connector> connector);
  void newConnection(UniqueFd sockfd);
  void removeConnection(const TcpConnectionPtr& conn);
  // `conn` closed before it was announced: its layer failed.
  void reportLayerFailure(const TcpConnection& conn);
  // Throws std::logic_error when `what` (a callback setter) comes after
  // connect().
  void checkNotStarted(const char* what) const;

  EventLoop* loop_;
  Options options_;  // changed only by the deprecated setters, before connect()
  std::shared_ptr<Connector> connector_;
  const std::string name_;
  ConnectionCallback connectionCallback_;
  MessageCallback messageCallback_;
  WriteCompleteCallback writeCompleteCallback_;
  ConnectErrorCallback connectErrorCallback_;      // also held by the connector
  ConnectFailureCallback connectFailureCallback_;  // also held by the connector
  std::atomic<bool> connect_{false};
  std::atomic<bool> started_{false};  // connect() has been called
  uint64_t nextConnId_ = 1;
  mutable Mutex mutex_;
  TcpConnectionPtr connection_ LIBNET_GUARDED_BY(mutex_);
};

}  // namespace libnet
