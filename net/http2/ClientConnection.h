// http2::ClientConnection: one HTTP/2 connection to one server, on one
// EventLoop: a TcpClient (TCP, or TLS with ALPN "h2") driving a
// ClientSession. h2c with prior knowledge when Options::layer is null;
// otherwise the layer's context must offer "h2", and a server that does not
// choose it is refused (closed, the reason says so).
//
//   auto conn = http2::ClientConnection::create(loop, addr, "api", {
//       .layer = tls::newLayer(tls::Context::newClient({.alpn = {"h2"}}), "api.example")});
//   conn->setStateCallback([](auto state, std::string_view why) { ... });
//   conn->connect();
//   conn->submit({{":method", "GET"}, {":scheme", "https"}, {":path", "/"},
//                 {":authority", "api.example"}}, {}, true, {.onHead = ..., .onClose = ...});
//
// Deadlines: the TCP connect, the TLS handshake and the server's first
// SETTINGS must all be done within Options::connectTimeout; the state turns
// kConnected when they are. Keepalive: after keepaliveInterval without a
// byte from the server, a PING; its ACK must come within keepaliveTimeout,
// else the connection closes. No reconnect: once kClosed it stays closed
// (a new connection is a new object).
//
// Streams are named by keys that this class hands out (any thread); every
// stream call may come from any thread and is carried to the loop through
// its queue, in the order each thread made them (on the loop thread, at
// once). A stream submitted before the connection is up waits for it; one
// whose request can no longer be sent (the connection closed, a GOAWAY came,
// ClientSession::Options::maxStreams reached) gets its onClose with refused
// set. Callbacks run on the loop thread; a callback must not destroy the
// connection.
//
// Create, connect and destroy it on its loop's thread (create() returns the
// only owner; tasks queued from other threads hold weak references).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/Duration.h"
#include "base/Timestamp.h"
#include "net/Callbacks.h"
#include "net/SocketAddress.h"
#include "net/TimerId.h"
#include "net/http2/ClientSession.h"

namespace libnet {
class ConnectionLayer;
class EventLoop;
class TcpClient;
}  // namespace libnet

namespace libnet::http2 {

class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
 public:
  struct Options {
    // TLS: tls::newLayer(tls::Context::newClient({.alpn = {"h2"}}), "host");
    // null: HTTP/2 with prior knowledge on plain TCP (h2c).
    std::shared_ptr<const ConnectionLayer> layer{};
    // TCP connect, TLS handshake and the server's first SETTINGS. > 0.
    Duration connectTimeout = std::chrono::seconds(10);
    // A PING after this long without input from the server; zero: no
    // keepalive. Its ACK must come within keepaliveTimeout (> 0).
    Duration keepaliveInterval = Duration::zero();
    Duration keepaliveTimeout = std::chrono::seconds(20);
    ClientSession::Options session{};
  };

  enum class State : uint8_t { kConnecting, kConnected, kClosed };
  // kConnected once; kClosed once, with why ("" never).
  using StateCallback = std::function<void(State state, std::string_view reason)>;
  using StreamKey = uint64_t;

  // Throws std::invalid_argument for a bad option.
  [[nodiscard]] static std::shared_ptr<ClientConnection> create(EventLoop* loop,
                                                                const SocketAddress& server,
                                                                std::string name, Options options);
  ~ClientConnection();
  ClientConnection(const ClientConnection&) = delete;
  ClientConnection& operator=(const ClientConnection&) = delete;

  // Before connect().
  void setStateCallback(StateCallback cb) { stateCallback_ = std::move(cb); }
  // Each PING ACK (keepalive's and ping()'s).
  void setPingAckCallback(std::function<void()> cb) { pingAckCallback_ = std::move(cb); }
  // Loop thread.
  void connect();

  // Any thread.
  StreamKey submit(ClientSession::Fields fields, std::string body, bool endStream,
                   ClientSession::StreamCallbacks callbacks);
  void write(StreamKey key, std::string data);
  void endStream(StreamKey key);
  void reset(StreamKey key, uint32_t errorCode);
  void pause(StreamKey key);
  void resume(StreamKey key);
  void ping();
  // GOAWAY from the client: open streams finish, then the connection closes.
  void goAway();
  // Closes now: every open stream closes (connectionLost).
  void close();

  // Loop thread.
  [[nodiscard]] State state() const { return state_; }
  // Request body bytes a stream has queued (ClientSession::queuedBytes);
  // 0 for a stream closed or not yet on the loop.
  [[nodiscard]] size_t queuedBytes(StreamKey key) const;
  [[nodiscard]] size_t heldBytes(StreamKey key) const;
  [[nodiscard]] EventLoop* loop() const { return loop_; }
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  ClientConnection(EventLoop* loop, const SocketAddress& server, std::string name, Options options);
  // Runs `fn(self)` on the loop, if the connection still exists then.
  template <class F>
  void inLoop(F&& fn);
  void submitInLoop(StreamKey key, ClientSession::Fields fields, std::string body, bool endStream,
                    ClientSession::StreamCallbacks callbacks);
  [[nodiscard]] int32_t idOf(StreamKey key) const;
  void onConnection(const TcpConnectionPtr& conn);
  void onMessage(Buffer* buf);
  // Sends what the session has; closes once it is finished or failed;
  // reports kConnected once its SETTINGS came.
  void advance();
  void flush();
  void armKeepalive(Duration delay);
  void onKeepalive();
  void onPingAck();
  void closeWith(std::string reason);

  EventLoop* loop_;
  const std::string name_;
  const Options options_;
  std::unique_ptr<TcpClient> tcp_;
  std::unique_ptr<ClientSession> session_;
  TcpConnectionPtr conn_;
  State state_ = State::kConnecting;
  StateCallback stateCallback_;
  std::function<void()> pingAckCallback_;
  std::atomic<StreamKey> nextKey_{1};
  std::unordered_map<StreamKey, int32_t> ids_;  // streams open, by key
  TimerId connectTimer_;
  TimerId keepaliveTimer_;
  TimerId ackTimer_;  // armed while a keepalive PING waits for its ACK
  MonoTime lastInput_{};
  bool busy_ = false;  // inside the session: the outer call sends
};

}  // namespace libnet::http2
