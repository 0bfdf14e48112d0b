// WebSocket: one WebSocket connection (RFC 6455), server or client role, on
// top of a TcpConnection (plain or TLS: it works on whatever connection it is
// given). Made by the server upgrade (WebSocketServer.h) or by the client
// (WebSocketClient.h) once the opening handshake is done, always held by
// std::shared_ptr. It owns the frame Receiver and Sender of the codec and
// sets the connection's message and connection callbacks; the connection and
// the WebSocket keep each other alive until the connection closes.
//
// Thread: everything runs on the connection's loop thread, callbacks
// included, and every method must be called there (loop()->runInLoop() from
// elsewhere).
//
// Messages: onMessage gets each complete message (fragments joined,
// decompressed, text checked as UTF-8); the view is valid during the call
// only. Pings are answered with a pong automatically; onPong (optional) sees
// pongs. Errors found by the Receiver close with the code they call for
// (1002 protocol, 1007 bad UTF-8 or deflate data, 1009 past maxFrameBytes /
// maxMessageBytes) and the reason. A callback that throws (anything) closes
// this WebSocket with 1011 (logged); other connections are not affected.
//
// Closing (RFC 6455 7): close() sends a close frame and waits up to
// Options::closeTimeout for the peer's; a close frame received is answered
// with the same code, then the TCP connection closes once that answer is
// written (a server closes TCP first, 7.1.1; a client waits for the server's
// FIN up to closeTimeout). onClose runs exactly once, with the peer's code and
// reason (1005 for a close frame without a code), or 1006 when the TCP
// connection ended without the peer's close frame (it dropped, it never
// answered ours within closeTimeout, it failed a keep-alive ping).
//
// Back-pressure: the connection's output limit (TcpConnection::
// setMaxQueuedOutput(); HttpServer::Options::maxQueuedOutput for a server).
// A send always queues the whole message and returns SendResult::kFull when
// the queued output is then past the limit: the connection has paused reading
// by itself, so an echo (or any reply-per-message protocol) stops taking new
// messages until the peer has read half of what is queued. A producer that is
// not driven by input should stop on kFull and resume in onDrain.
#pragma once

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/Duration.h"
#include "net/Callbacks.h"
#include "net/TimerId.h"
#include "net/websocket/Deflate.h"
#include "net/websocket/Frame.h"
#include "net/websocket/Options.h"

namespace libnet {
class Buffer;
class EventLoop;
}  // namespace libnet

namespace libnet::ws {

class WebSocket;
using WebSocketPtr = std::shared_ptr<WebSocket>;

enum class SendResult : uint8_t {
  kQueued,  // queued; the output is within the connection's limit
  kFull,    // queued, and the output is now past the limit: slow down
  kClosed,  // dropped: a close frame has been sent or the connection is gone
};

// What an application hands the server upgrade or the client, copied into
// every WebSocket made. Every callback runs on the connection's loop thread
// and may throw (1011, see the file comment).
struct Handlers {
  std::function<void(const WebSocketPtr&)> onOpen{};
  std::function<void(const WebSocketPtr&, MessageType, std::string_view payload)> onMessage{};
  std::function<void(const WebSocketPtr&, uint16_t code, std::string_view reason)> onClose{};
  std::function<void(const WebSocketPtr&, std::string_view payload)> onPong{};
  // Everything queued has been written, after a send returned kFull.
  std::function<void(const WebSocketPtr&)> onDrain{};
};

class WebSocket : public std::enable_shared_from_this<WebSocket> {
 public:
  enum class State : uint8_t { kOpen, kClosing, kClosed };

  // Takes over `conn` (established, the handshake done): its message and
  // connection callbacks, and its write-complete callback. `params` are the
  // negotiated deflate parameters (nullopt: no deflate). Loop thread. Call
  // start() next, with whatever input came behind the handshake.
  static WebSocketPtr create(const TcpConnectionPtr& conn, Role role, const Options& options,
                             std::optional<DeflateParams> params, Handlers handlers);
  // Runs onOpen, then reads the frames already in `leftover` (may be null).
  void start(Buffer* leftover);

  ~WebSocket();
  WebSocket(const WebSocket&) = delete;
  WebSocket& operator=(const WebSocket&) = delete;

  [[nodiscard]] SendResult sendText(std::string_view text) {
    return send(MessageType::kText, text);
  }
  [[nodiscard]] SendResult sendBinary(std::string_view data) {
    return send(MessageType::kBinary, data);
  }
  // One message; fragmented into frames of Options::fragmentSize (0: one
  // frame), or `fragmentSize` when given.
  SendResult send(MessageType type, std::string_view payload, size_t fragmentSize = 0);
  // A message sent piece by piece: the first piece with `first` set, the
  // last with `fin` set (a frame each; no compression for pieces).
  SendResult sendFragment(MessageType type, std::string_view piece, bool first, bool fin);
  // At most 125 bytes (longer: std::invalid_argument).
  SendResult ping(std::string_view payload = {});
  // Starts the closing handshake (once; later calls do nothing). `code` must
  // be sendable (1000-1003, 1007-1014, 3000-4999; else std::invalid_argument),
  // `reason` at most 123 bytes of UTF-8.
  void close(uint16_t code = close_code::kNormal, std::string_view reason = {});
  // Drops the TCP connection now (onClose with 1006).
  void forceClose();

  [[nodiscard]] State state() const { return state_; }
  [[nodiscard]] Role role() const { return role_; }
  [[nodiscard]] bool deflate() const { return deflateParams_.has_value(); }
  [[nodiscard]] const TcpConnectionPtr& connection() const { return conn_; }
  [[nodiscard]] EventLoop* loop() const;
  // Bytes queued for the peer and not yet written.
  [[nodiscard]] size_t queuedOutputBytes() const;
  // Heap memory held for this WebSocket: its connection's buffers
  // (TcpConnection::bufferCapacity()), its frame and message storage and
  // its zlib state. Idle, it is back to a small bound whatever the messages
  // were (docs/websocket.md, "Memory").
  [[nodiscard]] size_t heldMemory() const;
  // The application's own per-connection data.
  [[nodiscard]] std::any& context() { return context_; }

  // Keeps the TCP client (or anything else) alive as long as this WebSocket.
  void holdOwner(std::shared_ptr<void> owner) { owner_ = std::move(owner); }

 private:
  struct Codec;  // Receiver, Sender, deflate state (WebSocket.cc)
  WebSocket(const TcpConnectionPtr& conn, Role role, const Options& options,
            std::optional<DeflateParams> params, Handlers handlers);

  void onInput(Buffer* buf);
  // Handles the events in `buf` (`self`: onInput's reference, which keeps
  // this alive through callbacks that close); false when it stopped early
  // for back-pressure (the rest stays in `buf`).
  bool handleEvents(const WebSocketPtr& self, Buffer* buf);
  void onConnectionDown();
  void onWriteComplete();
  void receivedClose(uint16_t code, std::string_view reason);
  // Fails the connection (RFC 6455 7.1.7): a close frame with `code`, then
  // a half-close.
  void failWith(uint16_t code, std::string_view reason);
  void sendCloseFrame(uint16_t code, std::string_view reason);
  void startCloseTimer();
  void startPingTimer();
  void onPingTimer();
  // Hands the staged frames to the connection.
  SendResult flush();
  // kFull when the output is past the connection's limit.
  SendResult room();
  void cancelTimers();
  // Runs an application callback; a throw closes with 1011. False if it threw.
  template <class F>
  bool callApp(const char* what, F&& f);

  TcpConnectionPtr conn_;
  const Role role_;
  const Options options_;
  const std::optional<DeflateParams> deflateParams_;
  Handlers handlers_;
  std::unique_ptr<Codec> codec_;
  State state_ = State::kOpen;
  bool closeSent_ = false;
  bool closeReceived_ = false;
  bool finished_ = false;  // onClose has run
  bool drainWanted_ = false;
  bool drainCallbackSet_ = false;  // the connection's write-complete callback
  uint16_t finalCode_ = close_code::kAbnormal;
  std::string finalReason_;
  TimerId closeTimer_;
  TimerId pingTimer_;
  bool pingOutstanding_ = false;
  MonoTime lastInput_{};
  std::any context_;
  std::shared_ptr<void> owner_;
};

}  // namespace libnet::ws
