// TcpConnection: one established TCP connection, on one loop. Always held by
// std::shared_ptr (TcpConnectionPtr); its I/O keeps it alive while an event
// handler or an operation in flight needs it. TcpServer / TcpClient create
// it, own the map entry, and tear it down, through private entry points that
// only they (friends) reach.
//
// Thread safety: send(), shutdown(), forceClose(), connected() and the getters
// may be called from any thread; sends from one thread go out in the order
// they were made. Everything else, and every callback, runs on getLoop()'s
// thread.
//
// The connection holds the state machine, the callbacks, the input buffer and
// an output queue; how bytes move is its loop's backend's business, through
// an I/O strategy (ConnectionIo) made once by the loop's Poller (net/poller/:
// on epoll, reads until a short read on each edge and writes straight to the
// socket; on io_uring, a multishot recv and one send in flight). The API is
// the same on both. With a ConnectionLayer (TLS, net/tls/), the layer's
// strategy stands in between: callbacks see plaintext, and the connection
// (up) callback runs once the handshake is done (a connection whose handshake
// fails is never announced, and gets no (down) callback either).
//
// A callback that throws closes this connection only (logged at ERROR with
// its name; unread input dropped): see docs/architecture.md, "Callbacks that
// throw".
//
// Closing: if the peer half-closes (FIN), everything already queued for it is
// still written before the connection closes. shutdown() half-closes our side
// only once the output queue is empty. forceClose() drops queued output.
//
// This header is the application's view. The half that faces the backend (the
// strategy, the output queue, what the strategy reports as its
// ConnectionIo::Owner, the idle wheel and its entry) is TcpConnection::Impl, a
// class derived from this one and defined in TcpConnection.cc: every
// TcpConnection is made as one by create(), in the same allocation, and this
// class reaches it with a static_cast (a constant offset, no pointer to
// follow).
#pragma once

#include <sys/types.h>

#include <any>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/Callbacks.h"
#include "net/InetAddress.h"
#include "net/Socket.h"

namespace libnet {

class ConnectionAttachment;
class ConnectionLayer;
class EventLoop;
class TimingWheel;

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

  [[nodiscard]] EventLoop* getLoop() const { return loop_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  // Any thread. Given at construction, or looked up the first time asked
  // (one getsockname/getpeername, then kept). Asked for the first time only
  // after the connection has closed its fd, or after the peer reset it, a
  // lookup fails: the local address is then the fallback given at
  // construction (a server's listening address) and the peer's is the empty
  // address (0.0.0.0:0). Ask in the connection callback to be sure.
  [[nodiscard]] InetAddress localAddress() const { return address(kLocalKnown); }
  [[nodiscard]] InetAddress peerAddress() const { return address(kPeerKnown); }
  [[nodiscard]] bool connected() const { return state_.load() == State::kConnected; }
  [[nodiscard]] bool disconnected() const { return state_.load() == State::kDisconnected; }
  [[nodiscard]] int fd() const { return socket_.fd(); }
  // Whether the connection (up) callback has run: false while a layer's
  // handshake is under way, and for good if it failed. Loop thread.
  [[nodiscard]] bool announced() const { return announced_; }

  // Any thread. Off the loop thread the bytes are copied (moved for an
  // rvalue string) and the write happens on the loop.
  void send(std::string_view message);
  void send(std::string&& message);
  void send(const char* message) { send(std::string_view(message)); }
  // Takes all readable bytes of `buffer`.
  void send(Buffer* buffer);
  // Loop thread. Sends `length` bytes of `file` from `offset`, after whatever
  // was sent before and before whatever is sent after; the connection owns
  // the fd and closes it when done (or on close). Both backends use
  // sendfile(2) on the non-blocking socket (no copy through user space). A
  // file shorter than announced closes the connection (the peer was promised
  // `length` bytes). A reset peer makes sendfile(2) raise SIGPIPE: it is
  // blocked in the loop's thread around the call and taken back, so the
  // process's SIGPIPE disposition is left as the program set it. `head`
  // (optional, emptied) goes right before the file, packed with its first
  // segment (MSG_MORE) rather than in a small packet.
  void sendFile(UniqueFd file, off_t offset, size_t length, Buffer* head = nullptr);

  // Half-closes our side once the output queue has drained. Any thread.
  void shutdown();
  // Closes now, dropping queued output. Any thread.
  void forceClose();
  // Closes fully (no half-close) as soon as everything queued has been
  // written: for a protocol that is done with the peer (an HTTP response
  // with "Connection: close") and expects nothing more from it. Data the
  // peer still sends may turn the close into a reset; use shutdown() when
  // it might. Bytes sent after it are dropped. Loop thread.
  void closeAfterOutput();
  void setTcpNoDelay(bool on) { socket_.setTcpNoDelay(on); }

  // Pause / resume reading (e.g. while a slow consumer drains). Loop thread.
  // startRead() first hands the message callback whatever input was already
  // buffered (say, pipelined requests left unparsed when reading stopped).
  void stopRead();
  void startRead();
  // Bytes queued for the peer and not yet written: buffers, files still to
  // send, and the bytes queued behind them (under TLS: ciphertext not yet
  // sent, plaintext not yet encrypted and file bytes not yet read). Loop
  // thread.
  [[nodiscard]] size_t queuedOutputBytes() const;
  // Reading is on: not stopped by stopRead() nor paused by back-pressure.
  [[nodiscard]] bool isReading() const { return readBlocks_ == 0; }

  // Back-pressure: while more than `bytes` of output sit in this
  // connection's buffers (file ranges from sendFile() are not counted: they
  // take no memory; under TLS, ciphertext not yet sent, plaintext not yet
  // encrypted and queued file bytes, which will all be ciphertext, as for
  // the high-water mark), reading from the peer pauses, so TCP flow control holds
  // back a peer that sends without reading what it is sent (an echo or
  // request-response server would otherwise buffer all it sends); reading
  // resumes once the buffered output has drained to half of it. 0 turns it
  // off. Default kDefaultMaxQueuedOutput. Independent of stopRead(): reading
  // runs only when neither holds it. Output produced by other means (a
  // broadcast) is not bounded by this: see setHighWaterMarkCallback.
  // Loop thread (TcpServer::setMaxQueuedOutput sets it for each connection
  // before it is established).
  void setMaxQueuedOutput(size_t bytes) { maxQueuedOutput_ = bytes; }
  [[nodiscard]] size_t maxQueuedOutput() const { return maxQueuedOutput_; }

  void setContext(std::any context) { context_ = std::move(context); }
  [[nodiscard]] const std::any& getContext() const { return context_; }
  [[nodiscard]] std::any* getMutableContext() { return &context_; }

  void setConnectionCallback(ConnectionCallback cb) { connectionCallback_ = std::move(cb); }
  void setMessageCallback(MessageCallback cb) { messageCallback_ = std::move(cb); }
  void setWriteCompleteCallback(WriteCompleteCallback cb) {
    writeCompleteCallback_ = std::move(cb);
  }
  void setHighWaterMarkCallback(HighWaterMarkCallback cb, size_t highWaterMark) {
    highWaterMarkCallback_ = std::move(cb);
    highWaterMark_ = highWaterMark;
  }

  // Memory held by this connection's buffers (capacity, not content): what
  // it costs beyond its fixed size. Loop thread.
  [[nodiscard]] size_t bufferCapacity() const;

  // The connection's own input buffer: what message callbacks left unread
  // (the Buffer a callback is handed may be a shared one instead). Loop
  // thread.
  [[nodiscard]] Buffer* inputBuffer() { return &inputBuffer_; }

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
  // (nullopt) is looked up from the socket the first time it is asked for
  // (see localAddress()): a server accepting on a wildcard address, or on
  // io_uring (whose multishot accept reports no peer address), makes no
  // getsockname/getpeername call per connection. `localFallback` is what
  // localAddress() reports if the lookup can no longer be made (the
  // listening address, say). `layer` (optional) makes the connection's I/O
  // strategy instead of the loop's backend (TLS).
  [[nodiscard]] static TcpConnectionPtr create(EventLoop* loop, std::string name, UniqueFd sockfd,
                                               std::optional<InetAddress> localAddr,
                                               std::optional<InetAddress> peerAddr,
                                               const InetAddress& localFallback = InetAddress(),
                                               const ConnectionLayer* layer = nullptr);
  void setCloseCallback(CloseCallback cb) { closeCallback_ = std::move(cb); }
  // Before connectEstablished(): track idleness in `wheel`, a wheel of this
  // connection's loop, from connectEstablished() to connectDestroyed().
  void setIdleWheel(TimingWheel* wheel);
  void connectEstablished();
  void connectDestroyed();

  class Impl;
  // Only Impl (made by create()) constructs and destroys the part of it
  // that is a TcpConnection.
  TcpConnection(EventLoop* loop, std::string name, UniqueFd sockfd,
                std::optional<InetAddress> localAddr, std::optional<InetAddress> peerAddr,
                const InetAddress& localFallback);
  ~TcpConnection();
  [[nodiscard]] Impl& impl();
  [[nodiscard]] const Impl& impl() const;

  enum class State { kConnecting, kConnected, kDisconnecting, kDisconnected };
  // Why reading is off (bits of readBlocks_).
  enum ReadBlock : uint8_t { kStoppedByUser = 1, kOutputFull = 2 };

  // The strategy is done with the fd (ConnectionIo::Owner::onReleased(),
  // through Impl): hands it over, so that no address lookup uses it after.
  [[nodiscard]] UniqueFd onReleased();
  // Runs the connection (up) callback (once the strategy is ready()).
  void announce();
  // Runs the (down) callback if the (up) one ran, then tells the attachment.
  void announceClosed();
  // Which addresses are known (bits of addressesKnown_).
  enum AddressBit : uint8_t { kLocalKnown = 1, kPeerKnown = 2 };
  [[nodiscard]] InetAddress address(AddressBit which) const LIBNET_EXCLUDES(addressMutex_);

  // Runs a user callback. If it throws, logs it at ERROR with this
  // connection's name and `what`, and returns false: the caller closes the
  // connection (see "Callbacks that throw" in docs/architecture.md).
  template <class F>
  bool callUser(const char* what, F&& callback) noexcept;
  // A user callback threw: close now, dropping unread input and queued output.
  void closeAfterThrow();

  void sendInLoop(std::string_view data);
  void sendInLoop(Buffer* buffer);
  [[nodiscard]] bool acceptsOutput() const {
    if (state_.load() != State::kDisconnected && !closeWhenDrained_) return true;
    logDroppedOutput();
    return false;
  }
  void logDroppedOutput() const;
  // After bytes were handed to the strategy: report a failed write, fire
  // the high-water mark or write-complete callbacks, apply back-pressure.
  void afterWrite(int err, size_t bufferedBefore);
  // The write-complete callback, from the loop.
  void queueWriteComplete();
  void handleClose();
  void shutdownInLoop();
  // Reading stops when the first reason appears and resumes (buffered input
  // first) when the last goes away.
  void blockRead(ReadBlock why);
  void unblockRead(ReadBlock why);
  // After output was queued / written: apply or lift back-pressure.
  void checkOutputLimit();
  // A failed call: DEBUG when the peer or the network caused it
  // (Socket::isPeerError), ERROR otherwise.
  void logIoError(const char* call, int err) const;
  [[nodiscard]] static const char* stateName(State state);

  EventLoop* loop_;
  const std::string name_;
  std::atomic<State> state_{State::kConnecting};
  uint8_t readBlocks_ = 0;         // ReadBlock bits; 0: reading
  bool peerClosed_ = false;        // we read EOF
  bool writeShutdown_ = false;     // shutdown(SHUT_WR) done
  bool closeWhenDrained_ = false;  // closeAfterOutput()
  bool announced_ = false;         // the connection (up) callback ran
  Socket socket_;                  // emptied, under addressMutex_, when the fd is handed back
  // Looked up lazily (see localAddress()): written once under the mutex,
  // then read without it once its bit is set, a publication the analysis
  // cannot follow, so they carry no LIBNET_GUARDED_BY.
  mutable Mutex addressMutex_;
  mutable std::atomic<uint8_t> addressesKnown_{0};
  mutable InetAddress localAddr_;
  mutable InetAddress peerAddr_;
  ConnectionCallback connectionCallback_;
  MessageCallback messageCallback_;
  WriteCompleteCallback writeCompleteCallback_;
  HighWaterMarkCallback highWaterMarkCallback_;
  CloseCallback closeCallback_;
  size_t highWaterMark_ = kDefaultHighWaterMark;
  size_t maxQueuedOutput_ = kDefaultMaxQueuedOutput;
  // Empty until used: most connections read through the loop's scratch
  // buffer, write straight to the socket, and borrow storage from the loop's
  // BufferPool while they hold bytes, so an idle one costs no buffer memory.
  Buffer inputBuffer_{0};
  size_t serverSlot_ = 0;  // TcpServer's: where its loop's list keeps this connection
  std::any context_;
  std::shared_ptr<ConnectionAttachment> attachment_;
};

}  // namespace libnet
