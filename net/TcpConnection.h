// TcpConnection: one established stream connection, TCP or Unix domain
// socket (the name is TCP's, the class serves both), on one loop. Always held by
// std::shared_ptr (TcpConnectionPtr); its I/O keeps it alive while an event
// handler or an operation in flight needs it. TcpServer / TcpClient create
// it, own the map entry, and tear it down, through private entry points that
// only they (friends) reach.
//
// Thread safety: send(), shutdown(), forceClose(), connected(),
// disconnected(), loop(), name(), localAddress(), peerAddress() and
// peerCredentials() may be
// called from any thread; sends from one thread go out in the order they
// were made. Everything else (the other getters included), and every
// callback, runs on loop()'s thread.
//
// How bytes move is the loop's backend's business (epoll or io_uring; the API
// is the same on both). With a ConnectionLayer (TLS, net/tls/), callbacks see
// plaintext, and the connection (up) callback runs once the handshake is done
// (a connection whose handshake fails is never announced, and gets no (down)
// callback either).
//
// A callback that throws closes this connection only (logged at ERROR, unread
// input dropped): docs/architecture.md, "Callbacks that throw".
//
// Closing: after the peer's FIN, what is queued for it is still written
// before the close. shutdown() half-closes once output has drained.
//
// This header is the application's view. The half that faces the backend is
// TcpConnection::Impl (net/TcpConnectionImpl.h, the library's own), a class
// derived from this one: every TcpConnection is made as one by create(), in
// one allocation, and reaches it with a static_cast.
#pragma once

#include <sys/types.h>

#include <any>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/Duration.h"
#include "net/Callbacks.h"
#include "net/SocketAddress.h"

namespace libnet {

class Buffer;  // net/Buffer.h: what send() takes and message callbacks read
class ConnectionAttachment;
struct ConnectionCounters;
class ConnectionLayer;
class EventLoop;
class TimingWheel;
class UniqueFd;  // base/UniqueFd.h, for sendFile()

namespace test {
struct TcpConnectionAccess;  // tests/net/TestUtil.h
}  // namespace test

class TcpConnection : public std::enable_shared_from_this<TcpConnection> {
 public:
  static constexpr size_t kDefaultHighWaterMark = 64 * 1024 * 1024;
  // See setMaxQueuedOutput().
  static constexpr size_t kDefaultMaxQueuedOutput = 64 * 1024 * 1024;

  TcpConnection(const TcpConnection&) = delete;
  TcpConnection& operator=(const TcpConnection&) = delete;

  [[nodiscard]] EventLoop* loop() const { return loop_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  // Any thread. Looked up once when first asked; after the fd is closed or
  // the peer reset the connection, the lookup fails (local: the listening
  // address; peer: 0.0.0.0:0, or "unix:"). Ask in the connection callback to
  // be sure. A Unix client's own end is usually unnamed ("unix:").
  [[nodiscard]] SocketAddress localAddress() const;
  [[nodiscard]] SocketAddress peerAddress() const;
  // A Unix socket's peer: the pid, uid and gid of the process that connected
  // (SO_PEERCRED, as they were at connect()), for access checks. nullopt on
  // TCP. Any thread; looked up once when first asked, which must be before
  // the connection is closed (the connection callback is the place).
  [[nodiscard]] std::optional<ucred> peerCredentials() const;
  [[nodiscard]] bool connected() const { return state_.load() == State::kConnected; }
  [[nodiscard]] bool disconnected() const { return state_.load() == State::kDisconnected; }
  // The peer has ended its side (EOF read; with TLS, its close_notify),
  // though the connection may not be closed yet (what is owed to the peer
  // still goes out first). Loop thread.
  [[nodiscard]] bool peerClosed() const { return peerClosed_; }
  // -1 once the connection has handed its fd back to be closed. Loop thread.
  [[nodiscard]] int fd() const;
  // Whether an idle connection kept for reuse (a client's pool) can carry
  // another request: open, and nothing waiting at the socket, not a byte, a
  // FIN or an error. The loop hears of a FIN only when it next polls (an
  // io_uring receive that took bytes leaves it visible), so this asks the
  // socket: one recv(MSG_PEEK). Loop thread.
  [[nodiscard]] bool quietAndOpen() const;
  // Whether the connection (up) callback has run: false while a layer's
  // handshake is under way, and for good if it failed. Loop thread.
  [[nodiscard]] bool announced() const { return announced_; }
  // Why the connection's layer closed it before it was announced: "" unless
  // its handshake failed ("certificate verify failed: hostname mismatch",
  // "the TLS handshake timed out"). Loop thread.
  [[nodiscard]] std::string_view layerFailure() const;

  // The protocol its layer negotiated for the application (TLS ALPN: "h2",
  // "http/1.1"); empty without a layer or without ALPN. Loop thread.
  [[nodiscard]] std::string_view applicationProtocol() const;

  // Any thread. Off the loop thread the bytes are copied (moved for an
  // rvalue string) and the write happens on the loop.
  void send(std::string_view message);
  void send(std::string&& message);
  void send(const char* message) { send(std::string_view(message)); }
  // Takes all readable bytes of `buffer`.
  void send(Buffer* buffer);
  // Loop thread. Sends `length` bytes of `file` from `offset`, in order with
  // what is sent before and after; the connection owns the fd and closes it
  // when done (or on close). sendfile(2) on both backends (under TLS: read in
  // 16 KiB chunks and encrypted), without a SIGPIPE reaching the process. A file shorter than
  // announced closes the connection (the peer was promised `length` bytes). `head` (optional,
  // emptied) goes right before the file, in its first segment (MSG_MORE).
  void sendFile(UniqueFd file, off_t offset, size_t length, Buffer* head = nullptr);

  // Half-closes our side once the output queue has drained. Any thread.
  void shutdown();
  // Closes now, dropping queued output. Any thread.
  void forceClose();
  // Closes fully once everything queued is written: for a protocol done
  // with the peer ("Connection: close"). With nothing left queued the write
  // side is shut at once, so the FIN leaves right behind the answer; on
  // io_uring, with the answer still queued, the write side is shut as the
  // completion of its last send comes in (docs/architecture.md). Data
  // the peer still sends may turn the close into a reset (use shutdown()
  // then). Later sends are dropped. Loop thread.
  void closeAfterOutput();
  // TCP_NODELAY; nothing on a Unix socket.
  void setTcpNoDelay(bool on);

  // Pause / resume reading (e.g. while a slow consumer drains). Loop thread.
  // startRead() first hands the message callback whatever input was already
  // buffered (say, pipelined requests left unparsed when reading stopped).
  void stopRead();
  void startRead();
  // Bytes queued for the peer and not yet written, files and (under TLS)
  // plaintext not yet encrypted included. Loop thread.
  [[nodiscard]] size_t queuedOutputBytes() const;
  // Reading is on: not stopped by stopRead() nor paused by back-pressure.
  [[nodiscard]] bool isReading() const { return readBlocks_ == 0; }

  // The output limit, libnet's one back-pressure mechanism: while more than
  // `bytes` are queued for the peer (queuedOutputBytes(): file ranges too,
  // each holding an fd), reading from the peer pauses, so TCP flow control holds back a peer that
  // sends without reading; reading resumes (kept input first) once the output has drained to half.
  // A coroutine writer waits on it too; HttpServer stops answering pipelined requests. 0 turns it
  // off. Independent of stopRead(). Output made by other means (a broadcast) is not bounded: see
  // the high-water mark. Loop thread (a TcpServer sets it for each new connection).
  void setMaxQueuedOutput(size_t bytes) { maxQueuedOutput_ = bytes; }
  [[nodiscard]] size_t maxQueuedOutput() const { return maxQueuedOutput_; }

  void setContext(std::any context) { context_ = std::move(context); }
  [[nodiscard]] const std::any& context() const { return context_; }
  [[nodiscard]] std::any* mutableContext() { return &context_; }
  // The names of 0.1, kept for one minor version (CHANGELOG.md).
  [[deprecated("use context()")]] [[nodiscard]] const std::any& getContext() const {
    return context_;
  }
  [[deprecated("use mutableContext()")]] [[nodiscard]] std::any* getMutableContext() {
    return &context_;
  }
  [[deprecated("use loop()")]] [[nodiscard]] EventLoop* getLoop() const { return loop_; }

  void setConnectionCallback(ConnectionCallback cb) { connectionCallback_ = std::move(cb); }
  void setMessageCallback(MessageCallback cb) { messageCallback_ = std::move(cb); }
  void setWriteCompleteCallback(WriteCompleteCallback cb);
  void setHighWaterMarkCallback(HighWaterMarkCallback cb, size_t highWaterMark);

  // What the inspector lists (net/inspect/): bytes handed to the message
  // callback (plaintext under TLS) and bytes the application sent (written
  // or still queued, files included) on this connection, and when it was
  // established (connectEstablished()), to the whole second (kept in 32
  // bits that were padding: a connection's size does not grow for it).
  // Loop thread.
  [[nodiscard]] uint64_t bytesReceived() const { return bytesReceived_; }
  [[nodiscard]] uint64_t bytesSent() const { return bytesSent_; }
  [[nodiscard]] MonoTime establishedAt() const {
    return MonoTime(std::chrono::seconds(establishedSecond_));
  }

  // Memory its buffers hold (capacity, not content). Loop thread.
  [[nodiscard]] size_t bufferCapacity() const;

  // What message callbacks left unread (the Buffer a callback is handed may
  // be a shared one instead). Loop thread.
  [[nodiscard]] Buffer* inputBuffer();

  // A layer's per-connection state (see ConnectionAttachment), kept until
  // the connection is destroyed; it changes what the peer's half-close does.
  // Loop thread, before or inside the connection (up) callback.
  void setAttachment(std::shared_ptr<ConnectionAttachment> attachment) {
    attachment_ = std::move(attachment);
  }
  [[nodiscard]] ConnectionAttachment* attachment() const { return attachment_.get(); }

 private:
  // Library only: what TcpServer and TcpClient (and, through
  // test::TcpConnectionAccess, tests) use to make, wire up and tear down a
  // connection.
  friend class TcpClient;
  friend class TcpServer;
  friend struct test::TcpConnectionAccess;

  // A connection over `sockfd`, not yet established. An address left out
  // (nullopt) is looked up when first asked for, `localFallback` if it can
  // no longer be (see ConnectionSocket). `layer` (optional) makes the
  // connection's I/O strategy instead of the loop's backend (TLS).
  [[nodiscard]] static TcpConnectionPtr create(EventLoop* loop, std::string name, UniqueFd sockfd,
                                               std::optional<SocketAddress> localAddr,
                                               std::optional<SocketAddress> peerAddr,
                                               const SocketAddress& localFallback = {},
                                               const ConnectionLayer* layer = nullptr);
  void setCloseCallback(CloseCallback cb) { closeCallback_ = std::move(cb); }
  // Before connectEstablished(): track idleness in `wheel`, a wheel of this
  // connection's loop, from connectEstablished() to connectDestroyed().
  void setIdleWheel(TimingWheel* wheel);
  // Before connectEstablished(): count this connection's bytes in
  // `counters` (of its loop; outlives the connection).
  void setCounters(ConnectionCounters* counters) { counters_ = counters; }
  void connectEstablished();
  void connectDestroyed();

  class Impl;
  // Only Impl (made by create()) constructs and destroys the part of it
  // that is a TcpConnection.
  TcpConnection(EventLoop* loop, std::string name);
  ~TcpConnection();
  [[nodiscard]] Impl& impl();
  [[nodiscard]] const Impl& impl() const;

  enum class State : uint8_t { kConnecting, kConnected, kDisconnecting, kDisconnected };
  // Why reading is off (bits of readBlocks_).
  enum ReadBlock : uint8_t { kStoppedByUser = 1, kOutputFull = 2 };
  // What most connections never set (docs/benchmarks.md, "Memory per idle
  // connection"): made when first set, so that the others do not carry it.
  struct Seldom;
  [[nodiscard]] Seldom& seldom();
  // Bytes sent / received: this connection's count and its server loop's.
  void countSent(size_t n);
  void countReceived(size_t n);

  // Every connection carries these: keep them few and packed (an idle
  // connection's size is asserted in tests/net/IdleConnectionMemoryTest).
  EventLoop* loop_;
  const std::string name_;
  std::atomic<State> state_{State::kConnecting};
  uint8_t readBlocks_ = 0;         // ReadBlock bits; 0: reading
  bool peerClosed_ = false;        // we read EOF
  bool writeShutdown_ = false;     // shutdown(SHUT_WR) done
  bool closeWhenDrained_ = false;  // closeAfterOutput()
  bool finByIo_ = false;           // ... and the strategy sends the FIN (shutdownAfterOutput)
  bool announced_ = false;         // the connection (up) callback ran
  uint32_t serverSlot_ = 0;        // TcpServer's: where its loop's list keeps this connection
  // establishedAt(): MonoClock's seconds (from boot: 136 years fit).
  uint32_t establishedSecond_ = 0;
  ConnectionCallback connectionCallback_;
  MessageCallback messageCallback_;
  CloseCallback closeCallback_;
  size_t maxQueuedOutput_ = kDefaultMaxQueuedOutput;
  ConnectionCounters* counters_ = nullptr;  // TcpServer's metrics; null: not counted
  // This connection's own (bytesReceived(), bytesSent()): plain adds on
  // the loop thread, to lines the send and receive paths touch anyway.
  uint64_t bytesReceived_ = 0;
  uint64_t bytesSent_ = 0;
  std::any context_;
  std::shared_ptr<ConnectionAttachment> attachment_;
  std::unique_ptr<Seldom> seldom_;  // null until something in it is set
};

}  // namespace libnet
