// ClientConnection: one connection of an HttpClient's pool (private to
// //net/http:client): a TcpClient that makes it (by name, Happy Eyeballs,
// TLS when the origin is https), the response parser, the request it
// carries, and its connect and between-bytes timers. It reports what
// happened to its HttpClient, which owns it (shared_ptr, in the origin's
// pool) and decides: pool it, retry, fail, redirect.
//
// Every callback of the TcpClient and of the timers holds a weak_ptr, so a
// retired connection (its destruction queued on the loop) is never reached
// again. Loop thread only.
#pragma once

#include <memory>
#include <string>

#include "base/Duration.h"
#include "net/Callbacks.h"
#include "net/TimerId.h"
#include "net/http/ClientExchange.h"
#include "net/http/HttpResponseParser.h"

namespace libnet {
class ConnectionLayer;
class NameResolver;
class TcpClient;
struct ConnectFailure;
}  // namespace libnet

namespace libnet::http {
class HttpClient;
}  // namespace libnet::http

namespace libnet::http::detail {

class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
 public:
  enum class State : uint8_t { kConnecting, kBusy, kIdle, kClosed };

  ClientConnection(HttpClient* client, const PreparedRequest& first,
                   std::shared_ptr<const ConnectionLayer> layer,
                   std::shared_ptr<NameResolver> resolver);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Connects, then sends `exchange`.
  void start(std::shared_ptr<Exchange> exchange);
  // An idle connection takes the next request.
  void send(std::shared_ptr<Exchange> exchange);
  // Closes now; nothing is reported.
  void abort();
  // Idle, open, and nothing from the server waiting at the socket: fit to
  // take the next request (checked right before each reuse).
  [[nodiscard]] bool reusable() const;
  // Back-pressure for a streamed body: stop reading now; resume from the
  // loop's queue (never inside a callback that may be inside the parser).
  void pauseReading();
  void resumeReading();

  [[nodiscard]] State state() const { return state_; }
  [[nodiscard]] MonoTime idleSince() const { return idleSince_; }
  [[nodiscard]] const std::string& originKey() const { return originKey_; }

 private:
  void onConnection(const TcpConnectionPtr& conn);
  void onMessage(const TcpConnectionPtr& conn, Buffer* buf);
  void onConnectError(int error);
  void onClosed();
  void onConnectTimeout();
  void onIdleCheck();
  void armIdleTimer(Duration delay);
  void writeRequest();
  void completeResponse(bool reusable);
  void fail(ClientError error, bool retryable);
  void close();
  void cancelTimers();
  ClientError connectError(int error) const;

  HttpClient* client_;
  const std::string originKey_;
  const std::string hostPort_;
  const bool secure_;
  std::unique_ptr<TcpClient> tcp_;
  TcpConnectionPtr conn_;
  HttpResponseParser parser_;
  std::shared_ptr<Exchange> exchange_;
  State state_ = State::kConnecting;
  uint64_t sent_ = 0;  // requests sent on this connection
  bool reusedRequest_ = false;
  std::string failureText_;  // the last connect round's details, by name
  bool dnsFailure_ = false;
  std::string tlsFailure_;  // why the TLS handshake failed (ConnectFailure::layer)
  bool paused_ = false;
  TimerId connectTimer_;
  TimerId idleTimer_;
  MonoTime lastByte_{};
  MonoTime idleSince_{};
};

}  // namespace libnet::http::detail
