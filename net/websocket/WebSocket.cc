#include "net/websocket/WebSocket.h"

#include <any>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/EventLoop.h"
#include "net/LoopInternals.h"
#include "net/TcpConnection.h"
#include "net/websocket/Receiver.h"
#include "net/websocket/Sender.h"
#include "net/websocket/Utf8.h"

namespace libnet::ws {

namespace {

// A control frame, whole.
constexpr size_t kControlFrameBytes = kMaxFrameHeader + kMaxControlPayload;

// An application callback, as a log line names it when it throws.
struct CallbackOf {
  const char* callback;
  const std::string& connection;
};

LogStream& operator<<(LogStream& stream, const CallbackOf& of) {
  return stream << "WebSocket " << of.callback << " callback on " << of.connection;
}

}  // namespace

struct WebSocket::Codec {
  Codec(Role role, const Options& options, const std::optional<DeflateParams>& params,
        BufferPool* loopPool)
      : pool(loopPool),
        receiver(role, ReceiverLimits{options.maxFrameBytes, options.maxMessageBytes}, params,
                 loopPool),
        sender(role, params, options.deflate) {}

  // `out`, about to take `bytes` more. Frames that need more than small
  // storage are made in storage borrowed from the loop's pool, given back
  // once they are handed to the connection (flush()): an idle WebSocket
  // keeps no large frame storage, and a busy one allocates none per
  // message. Small frames use out's own small storage (BufferPool::reclaim()
  // leaves it), at no cost to the pool.
  Buffer* output(size_t bytes) {
    if (bytes > out.writableBytes() && bytes > BufferPool::kSmallCapacity) pool->lend(&out);
    return &out;
  }

  BufferPool* pool;
  Receiver receiver;
  Sender sender;
  // Frames made while a read is being handled go out together, in one
  // write, when it is done (a burst of small messages echoed is one send).
  Buffer out{0};
  bool batching = false;
  MonoTime pingSent{};
};

WebSocketPtr WebSocket::create(const TcpConnectionPtr& conn, Role role, const Options& options,
                               std::optional<DeflateParams> params, Handlers handlers) {
  WebSocketPtr ws(new WebSocket(conn, role, options, std::move(params), std::move(handlers)));
  // The connection's context owns the WebSocket until the connection goes
  // down (onConnectionDown clears it): the callbacks below may therefore
  // hold a plain pointer, as no callback of the connection runs after that.
  conn->setContext(ws);
  WebSocket* raw = ws.get();
  conn->setMessageCallback(
      [raw](const TcpConnectionPtr&, Buffer* buf, Timestamp) { raw->onInput(buf); });
  conn->setConnectionCallback([raw](const TcpConnectionPtr& c) {
    if (!c->connected()) raw->onConnectionDown();
  });
  return ws;
}

WebSocket::WebSocket(const TcpConnectionPtr& conn, Role role, const Options& options,
                     std::optional<DeflateParams> params, Handlers handlers)
    : conn_(conn),
      role_(role),
      options_(options),
      deflateParams_(std::move(params)),
      handlers_(std::move(handlers)),
      codec_(std::make_unique<Codec>(role, options_, deflateParams_,
                                     &LoopInternals::bufferPool(*conn->loop()))) {}

WebSocket::~WebSocket() = default;

EventLoop* WebSocket::loop() const { return conn_->loop(); }

size_t WebSocket::queuedOutputBytes() const {
  return conn_->queuedOutputBytes() + codec_->out.readableBytes();
}

size_t WebSocket::heldMemory() const {
  return conn_->bufferCapacity() + codec_->out.capacity() + codec_->receiver.heldMemory() +
         codec_->sender.heldMemory();
}

template <class F>
bool WebSocket::callApp(const char* what, F&& f) {
  if (callGuarded(CallbackOf{what, conn_->name()}, std::forward<F>(f))) return true;
  failWith(close_code::kInternalError, "internal error");
  return false;
}

void WebSocket::start(Buffer* leftover) {
  const WebSocketPtr self = shared_from_this();
  lastInput_ = MonoClock::now();
  if (options_.pingInterval > Duration::zero()) startPingTimer();
  if (handlers_.onOpen && !callApp("open", [&] { handlers_.onOpen(self); })) return;
  if (leftover != nullptr && leftover->readableBytes() > 0) onInput(leftover);
}

void WebSocket::onInput(Buffer* buf) {
  const WebSocketPtr self = shared_from_this();  // a callback may close the connection
  if (options_.pingInterval > Duration::zero()) {
    lastInput_ = MonoClock::now();
    pingOutstanding_ = false;  // anything from the peer shows it is alive
  }
  codec_->batching = true;
  const bool consumed = handleEvents(self, buf);
  codec_->batching = false;
  flush();
  // After a close or an error nothing more is read: what still comes is
  // dropped until the connection closes.
  if (consumed && codec_->receiver.done()) buf->retrieveAll();
}

bool WebSocket::handleEvents(const WebSocketPtr& self, Buffer* buf) {
  Receiver& receiver = codec_->receiver;
  while (!receiver.done()) {
    switch (receiver.next(buf)) {
      case Receiver::Event::kNeedMore:
        return true;
      case Receiver::Event::kMessage:
        if (!closeSent_ && handlers_.onMessage) {
          if (!callApp("message", [&] {
                handlers_.onMessage(self, receiver.messageType(), receiver.payload());
              })) {
            return true;
          }
        }
        // The replies so far would pass the output limit: hand them over
        // (the connection pauses reading) and leave the rest of the input
        // for when the peer has read them; the connection keeps it.
        if (conn_->maxQueuedOutput() != 0 && queuedOutputBytes() > conn_->maxQueuedOutput()) {
          flush();
          if (!conn_->isReading()) {
            // Paused, possibly for long (a peer that does not read): the
            // message's storage goes back now.
            receiver.releaseMessage();
            return false;
          }
        }
        break;
      case Receiver::Event::kPing:
        if (!closeSent_) {
          codec_->sender.appendPong(codec_->output(kControlFrameBytes), receiver.payload());
        }
        break;
      case Receiver::Event::kPong:
        if (handlers_.onPong) callApp("pong", [&] { handlers_.onPong(self, receiver.payload()); });
        break;
      case Receiver::Event::kClose:
        receivedClose(receiver.closeCode(), receiver.closeReason());
        return true;
      case Receiver::Event::kError:
        LOG_DEBUG << conn_->name() << ": WebSocket error " << receiver.closeCode() << " "
                  << receiver.error();
        failWith(receiver.closeCode(), receiver.error());
        return true;
    }
  }
  return true;
}

void WebSocket::receivedClose(uint16_t code, std::string_view reason) {
  closeReceived_ = true;
  finalCode_ = code;
  finalReason_ = std::string(reason);
  state_ = State::kClosing;
  if (!closeSent_) {
    // Echo the peer's code (an empty body for "no status", RFC 6455 5.5.1).
    // "" rather than a null view: the sender memcpy()s the reason.
    sendCloseFrame(code, "");
  }
  flush();
  if (role_ == Role::kServer) {
    // The server closes TCP first (RFC 6455 7.1.1), once the close is out.
    conn_->closeAfterOutput();
  } else {
    // A client waits for the server's FIN, bounded by the close timer.
    conn_->shutdown();
  }
  startCloseTimer();
}

void WebSocket::failWith(uint16_t code, std::string_view reason) {
  if (state_ == State::kClosed) return;
  if (!closeSent_) {
    finalCode_ = code;
    finalReason_ = std::string(reason);
    sendCloseFrame(code, reason);
  }
  state_ = State::kClosing;
  flush();
  // Half-close rather than close: the peer may still be sending, and a close
  // with unread input would reset the connection before it reads our close
  // frame. What it sends is dropped; the close timer bounds the wait.
  conn_->shutdown();
  startCloseTimer();
}

void WebSocket::close(uint16_t code, std::string_view reason) {
  if (reason.data() == nullptr) reason = "";  // the sender memcpy()s it
  if (!isSendableCloseCode(code)) {
    throw std::invalid_argument("WebSocket::close: code " + std::to_string(code) +
                                " may not be sent");
  }
  if (closeSent_ || state_ == State::kClosed) return;
  state_ = State::kClosing;
  sendCloseFrame(code, reason);
  if (!codec_->batching) flush();
  startCloseTimer();
}

void WebSocket::forceClose() {
  if (state_ != State::kClosed) conn_->forceClose();
}

void WebSocket::sendCloseFrame(uint16_t code, std::string_view reason) {
  closeSent_ = true;
  codec_->sender.appendClose(codec_->output(kControlFrameBytes), code, reason);
}

void WebSocket::startCloseTimer() {
  if (closeTimer_.valid()) return;
  closeTimer_ = loop()->runAfter(options_.closeTimeout, [weak = weak_from_this()] {
    if (const WebSocketPtr ws = weak.lock()) {
      ws->closeTimer_ = TimerId();
      LOG_DEBUG << ws->conn_->name() << ": WebSocket close handshake timed out";
      ws->conn_->forceClose();
    }
  });
}

void WebSocket::startPingTimer() {
  const MonoTime now = MonoClock::now();
  Duration wait = options_.pingInterval - (now - lastInput_);
  if (pingOutstanding_) wait = options_.pingTimeout - (now - codec_->pingSent);
  if (wait < std::chrono::milliseconds(1)) wait = std::chrono::milliseconds(1);
  pingTimer_ = loop()->runAfter(wait, [weak = weak_from_this()] {
    if (const WebSocketPtr ws = weak.lock()) ws->onPingTimer();
  });
}

void WebSocket::onPingTimer() {
  pingTimer_ = TimerId();
  if (state_ == State::kClosed) return;
  const MonoTime now = MonoClock::now();
  if (pingOutstanding_ && now - codec_->pingSent >= options_.pingTimeout) {
    LOG_DEBUG << conn_->name() << ": WebSocket peer did not answer a ping";
    conn_->forceClose();
    return;
  }
  if (!pingOutstanding_ && now - lastInput_ >= options_.pingInterval && !closeSent_) {
    pingOutstanding_ = true;
    codec_->pingSent = now;
    codec_->sender.appendPing(codec_->output(kControlFrameBytes));
    flush();
  }
  startPingTimer();
}

SendResult WebSocket::send(MessageType type, std::string_view payload, size_t fragmentSize) {
  if (closeSent_ || state_ == State::kClosed) return SendResult::kClosed;
  if (fragmentSize == 0) fragmentSize = options_.fragmentSize;
  codec_->sender.appendMessage(codec_->output(framedSize(payload.size(), fragmentSize)), type,
                               payload, fragmentSize);
  return codec_->batching ? room() : flush();
}

SendResult WebSocket::sendFragment(MessageType type, std::string_view piece, bool first, bool fin) {
  if (closeSent_ || state_ == State::kClosed) return SendResult::kClosed;
  if (first == codec_->sender.inFragmentedMessage()) {
    throw std::logic_error(first ? "WebSocket::sendFragment: a fragmented message is under way"
                                 : "WebSocket::sendFragment: no fragmented message to continue");
  }
  codec_->sender.appendFragment(codec_->output(framedSize(piece.size(), 0)), type, piece, fin);
  return codec_->batching ? room() : flush();
}

SendResult WebSocket::ping(std::string_view payload) {
  if (payload.size() > kMaxControlPayload) {
    throw std::invalid_argument("WebSocket::ping: payload over 125 bytes");
  }
  if (closeSent_ || state_ == State::kClosed) return SendResult::kClosed;
  codec_->sender.appendPing(codec_->output(kControlFrameBytes), payload);
  return codec_->batching ? room() : flush();
}

SendResult WebSocket::room() {
  const size_t limit = conn_->maxQueuedOutput();
  if (limit == 0 || queuedOutputBytes() <= limit) return SendResult::kQueued;
  if (!drainCallbackSet_ && handlers_.onDrain) {
    drainCallbackSet_ = true;
    // Set only once a send has found the output full: a write-complete
    // callback costs a queued functor on every drain, which an echo that
    // never fills its output should not pay. The connection checks it is
    // still set when the queued call runs, so clearing it at the close
    // (onConnectionDown) is enough to keep it from reaching a WebSocket
    // already gone.
    conn_->setWriteCompleteCallback([this](const TcpConnectionPtr&) { onWriteComplete(); });
  }
  drainWanted_ = true;
  return SendResult::kFull;
}

SendResult WebSocket::flush() {
  Buffer& out = codec_->out;
  if (out.readableBytes() > 0 && state_ != State::kClosed) conn_->send(&out);
  out.retrieveAll();
  if (out.capacity() > BufferPool::kSmallCapacity) codec_->pool->reclaim(&out);
  return room();
}

void WebSocket::onWriteComplete() {
  if (!drainWanted_ || state_ != State::kOpen) return;
  drainWanted_ = false;
  const WebSocketPtr self = shared_from_this();
  if (handlers_.onDrain) callApp("drain", [&] { handlers_.onDrain(self); });
}

void WebSocket::onConnectionDown() {
  const WebSocketPtr self = shared_from_this();
  state_ = State::kClosed;
  cancelTimers();
  const uint16_t code = closeReceived_ ? finalCode_ : close_code::kAbnormal;
  const std::string reason = closeReceived_ ? std::move(finalReason_) : std::string();
  conn_->setWriteCompleteCallback({});
  conn_->setContext(std::any());
  if (owner_) {
    // The owner (a TcpClient) is not destroyed inside its own connection's
    // callback.
    loop()->queueInLoop([owner = std::move(owner_)] {});
  }
  if (!finished_ && handlers_.onClose) {
    finished_ = true;
    callGuarded(CallbackOf{"close", conn_->name()}, [&] { handlers_.onClose(self, code, reason); });
  }
  finished_ = true;
}

void WebSocket::cancelTimers() {
  if (closeTimer_.valid()) loop()->cancel(std::exchange(closeTimer_, TimerId()));
  if (pingTimer_.valid()) loop()->cancel(std::exchange(pingTimer_, TimerId()));
}

}  // namespace libnet::ws
