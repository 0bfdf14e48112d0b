// CoroWebSocket: a WebSocket connection as a coroutine sees it (net/coro/),
// either role, on a coro::Stream. Reads and sends are awaitables that end
// with values, never exceptions; withTimeout() / withStop() cancel them like
// any operation of the layer.
//
//   // In a coroutine HTTP server, for a request that asks to upgrade:
//   ws::AcceptResult r = co_await ws::accept(stream, request);
//   if (!r) co_return;  // a bad upgrade: already answered (400 / 426) and closing
//   for (;;) {
//     ws::Message m = co_await r.socket.read();
//     if (m.isClose()) break;  // the close handshake is done (or the connection gone)
//     co_await r.socket.send(m.type, m.payload);
//   }
//
//   // A client:
//   ws::CoroConnectResult c = co_await ws::connect(loop, "ws://127.0.0.1:8080/chat");
//   if (!c) LOG_WARN << c.error;
//
// read() answers pings (a pong), skips pongs, and on the peer's close
// frame answers it and returns it as a close message; a frame that breaks
// the protocol (or a limit of Options) is answered with the close code it
// calls for and returned the same way; a dropped connection is close code
// 1006. send() hands the frames over and, like Stream::write(), waits while
// the connection's output is past its limit (back-pressure). close() sends a
// close frame and waits (up to Options::closeTimeout) for the peer's.
//
// One operation at a time: read(), send(), ping() and close() are awaited one
// after another (read() itself writes when it answers a ping or a close, and
// a stream has one write pending at most). Thread: the loop of the stream's
// connection. Move-only; destroying it closes the connection once
// its output is written (as a Stream does).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "net/Buffer.h"
#include "net/coro/Errc.h"
#include "net/coro/Stream.h"
#include "net/coro/Task.h"
#include "net/http/HttpRequest.h"
#include "net/websocket/Frame.h"
#include "net/websocket/Options.h"
#include "net/websocket/WebSocketClient.h"

namespace libnet {
class BufferPool;
class EventLoop;
class TcpClient;
}  // namespace libnet

namespace libnet::ws {

class Receiver;
class Sender;

struct Message {
  MessageType type = MessageType::kBinary;
  std::string payload{};  // the message; empty for a close
  // Set for a close: the peer's code (1005 without one), the code we sent
  // for a protocol error, or 1006 when the connection ended without a close.
  std::optional<uint16_t> closeCode{};
  std::string closeReason{};
  // kTimedOut / kCancelled: a scope around the read ended it (no message).
  coro::Errc error = coro::Errc::kOk;
  [[nodiscard]] bool isClose() const { return closeCode.has_value(); }
};

class CoroWebSocket {
 public:
  CoroWebSocket();
  CoroWebSocket(coro::Stream stream, Role role, const Options& options,
                std::optional<DeflateParams> params);
  CoroWebSocket(CoroWebSocket&&) noexcept;
  CoroWebSocket& operator=(CoroWebSocket&&) noexcept;
  ~CoroWebSocket();

  [[nodiscard]] explicit operator bool() const { return static_cast<bool>(stream_); }
  // The next message, or the close (see the file comment).
  [[nodiscard]] coro::Task<Message> read();
  // kOk once handed over with the output within the limit; kClosed after a
  // close; kTimedOut / kCancelled from a scope around it.
  [[nodiscard]] coro::Task<coro::Errc> send(MessageType type, std::string_view payload);
  [[nodiscard]] coro::Task<coro::Errc> ping(std::string_view payload = {});
  // Sends a close frame (once) and reads until the peer's close comes back,
  // at most Options::closeTimeout; returns the peer's code (1006 if none).
  [[nodiscard]] coro::Task<uint16_t> close(uint16_t code = close_code::kNormal,
                                           std::string_view reason = {});

  [[nodiscard]] bool deflate() const { return deflate_; }
  // Heap memory held for this socket: its connection's buffers, its frame
  // and message storage and its zlib state (as WebSocket::heldMemory()).
  [[nodiscard]] size_t heldMemory() const;
  [[nodiscard]] coro::Stream& stream() { return stream_; }
  // Keeps the client that made the connection (coroutine connect()).
  void holdClient(std::unique_ptr<TcpClient> client);

 private:
  // The loop's buffer pool, which lends out_ its storage while it holds
  // frames.
  [[nodiscard]] BufferPool& pool() const;
  // out_, about to take `bytes` more (storage borrowed when they need it).
  Buffer* output(size_t bytes);
  coro::Task<coro::Errc> flush();
  // The message to return for a close or an error the Receiver reported.
  coro::Task<Message> closing(uint16_t code, std::string reason, bool peerClosed);

  // Declared first, so destroyed last: destroying a TcpClient closes its
  // connection, which the stream still uses until it goes.
  std::unique_ptr<TcpClient> client_;
  coro::Stream stream_;
  Role role_ = Role::kServer;
  Options options_{};
  bool deflate_ = false;
  bool closeSent_ = false;
  bool closeReceived_ = false;
  std::unique_ptr<Receiver> receiver_;
  std::unique_ptr<Sender> sender_;
  Buffer out_{0};
};

struct AcceptResult {
  CoroWebSocket socket{};
  int status = 0;  // 0: accepted; else the status the request was refused with
  [[nodiscard]] explicit operator bool() const { return status == 0; }
};

// The server side of the upgrade on a coroutine's stream, for `request`
// (just parsed from it; what the client sent after it is still unread in
// the stream and becomes the first frames). A bad upgrade is answered with
// the status checkUpgradeRequest() gives, and the stream half-closed.
[[nodiscard]] coro::Task<AcceptResult> accept(coro::Stream stream, const http::HttpRequest& request,
                                              Options options);
// With the default Options. (An overload rather than a default argument: GCC
// 12 mishandles a coroutine parameter initialized from a default argument.)
[[nodiscard]] coro::Task<AcceptResult> accept(coro::Stream stream,
                                              const http::HttpRequest& request);

struct CoroConnectResult {
  CoroWebSocket socket{};
  std::string error{};  // empty on success; else why (as ws::connect's onError)
  [[nodiscard]] explicit operator bool() const { return error.empty(); }
};

// The client: as ws::connect() (WebSocketClient.h), awaited. Loop thread.
// Throws std::invalid_argument for a URL that is not ws:// or wss://.
[[nodiscard]] coro::Task<CoroConnectResult> connect(EventLoop* loop, std::string url,
                                                    ClientOptions options);
[[nodiscard]] coro::Task<CoroConnectResult> connect(EventLoop* loop, std::string url);

}  // namespace libnet::ws
