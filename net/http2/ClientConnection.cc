#include "net/http2/ClientConnection.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/ConnectFailure.h"
#include "net/EventLoop.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"

namespace libnet::http2 {

namespace {

// Frames are produced in slices, each sent as it is made, while the
// connection holds less than kAhead bytes of output (as the server does,
// net/http2/Http2Server.cc): the write-complete callback asks for more.
constexpr size_t kSlice = 64 * 1024;
constexpr size_t kAhead = 2 * kSlice;
// After the last frames (a GOAWAY) a half-close; a server that does not
// close in turn is cut off after this.
constexpr Duration kCloseGrace = std::chrono::seconds(1);

std::string millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

void check(const ClientConnection::Options& options) {
  if (options.connectTimeout <= Duration::zero()) {
    throw std::invalid_argument("http2::ClientConnection: connectTimeout must be > 0");
  }
  if (options.keepaliveInterval < Duration::zero() ||
      options.keepaliveTimeout <= Duration::zero()) {
    throw std::invalid_argument(
        "http2::ClientConnection: keepaliveInterval must be >= 0 and keepaliveTimeout > 0");
  }
}

}  // namespace

std::shared_ptr<ClientConnection> ClientConnection::create(EventLoop* loop,
                                                           const SocketAddress& server,
                                                           std::string name, Options options) {
  check(options);
  return std::shared_ptr<ClientConnection>(
      new ClientConnection(loop, server, std::move(name), std::move(options)));
}

ClientConnection::ClientConnection(EventLoop* loop, const SocketAddress& server, std::string name,
                                   Options options)
    : loop_(loop), name_(std::move(name)), options_(std::move(options)) {
  TcpClient::Options tcpOptions;
  tcpOptions.tcpNoDelay = true;
  tcpOptions.layer = options_.layer;
  tcp_ = std::make_unique<TcpClient>(loop, server, name_, tcpOptions);
  // The session exists from the start: requests submitted while connecting
  // queue in it behind the client preface.
  session_ = std::make_unique<ClientSession>(name_, options_.session);
  session_->setPingAckCallback([this] { onPingAck(); });
}

ClientConnection::~ClientConnection() {
  loop_->assertInLoopThread();
  if (connectTimer_.valid()) loop_->cancel(connectTimer_);
  if (keepaliveTimer_.valid()) loop_->cancel(keepaliveTimer_);
  if (ackTimer_.valid()) loop_->cancel(ackTimer_);
  tcp_->stop();
  if (conn_) conn_->forceClose();
  // Streams still open hear of it (connectionLost); nothing else is called.
  stateCallback_ = nullptr;
  session_.reset();
}

template <class F>
void ClientConnection::inLoop(F&& fn) {
  loop_->runInLoop([weak = weak_from_this(), fn = std::forward<F>(fn)]() mutable {
    if (const std::shared_ptr<ClientConnection> self = weak.lock()) fn(*self);
  });
}

void ClientConnection::connect() {
  loop_->assertInLoopThread();
  const std::weak_ptr<ClientConnection> weak = weak_from_this();
  tcp_->setConnectionCallback([weak](const TcpConnectionPtr& conn) {
    if (const auto self = weak.lock()) self->onConnection(conn);
  });
  tcp_->setMessageCallback([weak](const TcpConnectionPtr&, Buffer* buf, Timestamp) {
    if (const auto self = weak.lock()) {
      self->onMessage(buf);
    } else {
      buf->retrieveAll();
    }
  });
  tcp_->setWriteCompleteCallback([weak](const TcpConnectionPtr&) {
    if (const auto self = weak.lock()) self->advance();
  });
  // A refused connect is final here (no reconnect: the caller decides).
  tcp_->setConnectErrorCallback([weak](int error) {
    if (const auto self = weak.lock()) {
      self->closeWith(std::string("connect failed: ") + strerrorTl(error));
    }
  });
  tcp_->setConnectFailureCallback([weak](const ConnectFailure& failure) {
    if (const auto self = weak.lock(); self && !failure.layer.empty()) {
      self->closeWith("TLS handshake failed: " + failure.layer);
    }
  });
  connectTimer_ = loop_->runAfter(options_.connectTimeout, [weak] {
    const auto self = weak.lock();
    if (!self) return;
    self->connectTimer_ = TimerId();
    if (self->state_ == State::kConnecting) {
      self->closeWith("connect timed out after " + millis(self->options_.connectTimeout) +
                      " (TCP, TLS and the server's SETTINGS)");
    }
  });
  tcp_->connect();
}

void ClientConnection::onConnection(const TcpConnectionPtr& conn) {
  if (!conn->connected()) {
    conn_.reset();
    closeWith(state_ == State::kConnecting ? "connection closed before the server's SETTINGS"
                                           : "connection closed by the server");
    return;
  }
  if (state_ == State::kClosed) {
    conn->forceClose();
    return;
  }
  tcp_->stop();
  if (options_.layer && conn->applicationProtocol() != "h2") {
    conn->forceClose();
    closeWith("the server did not choose h2 by ALPN (chose \"" +
              std::string(conn->applicationProtocol()) + "\")");
    return;
  }
  conn_ = conn;
  lastInput_ = MonoClock::now();
  advance();  // the preface, and the requests submitted meanwhile
}

void ClientConnection::onMessage(Buffer* buf) {
  if (state_ == State::kClosed || !session_) {
    buf->retrieveAll();
    return;
  }
  lastInput_ = MonoClock::now();
  busy_ = true;
  const bool ok = session_->receive(std::string_view(buf->peek(), buf->readableBytes()));
  busy_ = false;
  buf->retrieveAll();
  if (!ok) {
    flush();  // the GOAWAY saying why
    closeWith("HTTP/2 error: " + session_->failure());
    return;
  }
  advance();
}

void ClientConnection::flush() {
  if (!conn_ || !session_) return;
  const size_t limit = conn_->maxQueuedOutput();
  const size_t ceiling = limit == 0 ? kAhead : std::min(kAhead, limit / 2);
  Buffer out;
  busy_ = true;
  while (session_->wantsWrite()) {
    const size_t queued = conn_->queuedOutputBytes();
    if (queued >= ceiling) break;  // the write-complete callback resumes
    session_->produce(&out, std::min(kSlice, ceiling - queued));
    if (out.readableBytes() == 0) break;  // the rest waits for the server's window
    conn_->send(&out);
    out.retrieveAll();
  }
  busy_ = false;
}

void ClientConnection::advance() {
  if (state_ == State::kClosed || !session_ || busy_) return;
  flush();
  if (session_->failed()) {
    closeWith("HTTP/2 error: " + session_->failure());
    return;
  }
  if (state_ == State::kConnecting && session_->settingsReceived()) {
    state_ = State::kConnected;
    if (connectTimer_.valid()) loop_->cancel(connectTimer_);
    connectTimer_ = TimerId();
    if (options_.keepaliveInterval > Duration::zero()) armKeepalive(options_.keepaliveInterval);
    if (stateCallback_) stateCallback_(State::kConnected, "connected");
  }
  if (conn_ && session_->finished()) {
    closeWith(session_->goAwayReceived() ? "GOAWAY from the server, every stream done"
                                         : "GOAWAY sent, every stream done");
  }
}

void ClientConnection::armKeepalive(Duration delay) {
  keepaliveTimer_ = loop_->runAfter(delay, [weak = weak_from_this()] {
    if (const auto self = weak.lock()) self->onKeepalive();
  });
}

// One timer for the interval, not one per read: each read only stamps the
// time, and the timer, when it fires early, waits out the rest.
void ClientConnection::onKeepalive() {
  keepaliveTimer_ = TimerId();
  if (state_ != State::kConnected) return;
  const Duration quiet = MonoClock::now() - lastInput_;
  if (quiet < options_.keepaliveInterval) {
    armKeepalive(options_.keepaliveInterval - quiet);
    return;
  }
  session_->ping();
  ackTimer_ = loop_->runAfter(options_.keepaliveTimeout, [weak = weak_from_this()] {
    const auto self = weak.lock();
    if (!self) return;
    self->ackTimer_ = TimerId();
    self->closeWith("keepalive PING not acknowledged within " +
                    millis(self->options_.keepaliveTimeout));
  });
  advance();
}

void ClientConnection::onPingAck() {
  if (ackTimer_.valid()) {
    loop_->cancel(ackTimer_);
    ackTimer_ = TimerId();
    armKeepalive(options_.keepaliveInterval);
  }
  if (pingAckCallback_) pingAckCallback_();
}

void ClientConnection::closeWith(std::string reason) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  for (TimerId* timer : {&connectTimer_, &keepaliveTimer_, &ackTimer_}) {
    if (timer->valid()) loop_->cancel(*timer);
    *timer = TimerId();
  }
  tcp_->stop();
  if (conn_) {
    flush();
    // What is queued (a GOAWAY) goes out, then the FIN; a server that does
    // not close in turn is cut off.
    conn_->shutdown();
    conn_->loop()->runAfter(kCloseGrace, [weak = std::weak_ptr<TcpConnection>(conn_)] {
      if (const TcpConnectionPtr c = weak.lock()) c->forceClose();
    });
  }
  LOG_DEBUG << name_ << ": HTTP/2 client connection closed: " << reason;
  // The streams still open close now (connectionLost); their callbacks may
  // submit again, which finds no session and is refused.
  std::unique_ptr<ClientSession> session = std::move(session_);
  session.reset();
  ids_.clear();
  if (stateCallback_) stateCallback_(State::kClosed, reason);
}

ClientConnection::StreamKey ClientConnection::submit(ClientSession::Fields fields, std::string body,
                                                     bool endStream,
                                                     ClientSession::StreamCallbacks callbacks) {
  const StreamKey key = nextKey_.fetch_add(1, std::memory_order_relaxed);
  inLoop([key, fields = std::move(fields), body = std::move(body), endStream,
          callbacks = std::move(callbacks)](ClientConnection& self) mutable {
    self.submitInLoop(key, std::move(fields), std::move(body), endStream, std::move(callbacks));
  });
  return key;
}

void ClientConnection::submitInLoop(StreamKey key, ClientSession::Fields fields, std::string body,
                                    bool endStream, ClientSession::StreamCallbacks callbacks) {
  std::function<void(const ClientSession::Close&)> onClose = std::move(callbacks.onClose);
  // The session calls back only while it exists, which is within this
  // object's life: `this` is safe here.
  callbacks.onClose = [this, key, onClose](const ClientSession::Close& close) {
    ids_.erase(key);
    if (onClose) onClose(close);
  };
  const int32_t id =
      session_ ? session_->submit(fields, std::move(body), endStream, std::move(callbacks)) : 0;
  if (id == 0) {
    // Told from the loop's queue, not from inside the caller's submit().
    loop_->queueInLoop([onClose] {
      ClientSession::Close close;
      close.errorCode = NGHTTP2_REFUSED_STREAM;
      close.refused = true;
      close.connectionLost = true;
      if (onClose) onClose(close);
    });
    return;
  }
  ids_[key] = id;
  advance();
}

int32_t ClientConnection::idOf(StreamKey key) const {
  const auto it = ids_.find(key);
  return it != ids_.end() && session_ ? it->second : 0;
}

void ClientConnection::write(StreamKey key, std::string data) {
  inLoop([key, data = std::move(data)](ClientConnection& self) {
    if (const int32_t id = self.idOf(key)) {
      self.session_->write(id, data);
      self.advance();
    }
  });
}

void ClientConnection::endStream(StreamKey key) {
  inLoop([key](ClientConnection& self) {
    if (const int32_t id = self.idOf(key)) {
      self.session_->endStream(id);
      self.advance();
    }
  });
}

void ClientConnection::reset(StreamKey key, uint32_t errorCode) {
  inLoop([key, errorCode](ClientConnection& self) {
    if (const int32_t id = self.idOf(key)) {
      self.session_->reset(id, errorCode);
      self.advance();
    }
  });
}

void ClientConnection::pause(StreamKey key) {
  inLoop([key](ClientConnection& self) {
    if (const int32_t id = self.idOf(key)) self.session_->pause(id);
  });
}

void ClientConnection::resume(StreamKey key) {
  inLoop([key](ClientConnection& self) {
    if (const int32_t id = self.idOf(key)) {
      self.session_->resume(id);
      self.advance();
    }
  });
}

void ClientConnection::ping() {
  inLoop([](ClientConnection& self) {
    if (!self.session_) return;
    self.session_->ping();
    self.advance();
  });
}

void ClientConnection::goAway() {
  inLoop([](ClientConnection& self) {
    if (!self.session_) return;
    self.session_->goAway();
    self.advance();
  });
}

void ClientConnection::close() {
  // Through the queue even on the loop thread: a stream callback that calls
  // it is inside the session.
  loop_->queueInLoop([weak = weak_from_this()] {
    if (const auto self = weak.lock()) self->closeWith("closed by the application");
  });
}

size_t ClientConnection::queuedBytes(StreamKey key) const {
  const int32_t id = idOf(key);
  return id != 0 ? session_->queuedBytes(id) : 0;
}

size_t ClientConnection::heldBytes(StreamKey key) const {
  const int32_t id = idOf(key);
  return id != 0 ? session_->heldBytes(id) : 0;
}

}  // namespace libnet::http2
