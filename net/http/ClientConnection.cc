#include "net/http/ClientConnection.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/ConnectFailure.h"
#include "net/EventLoop.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/http/HttpClient.h"

namespace libnet::http::detail {

namespace {

using Kind = ClientError::Kind;

ClientError parserError(const HttpResponseParser& parser) {
  Kind kind = Kind::kMalformed;
  switch (parser.error()) {
    case HttpResponseParser::Error::kTooLarge:
      kind = Kind::kTooLarge;
      break;
    case HttpResponseParser::Error::kTruncated:
      kind = Kind::kTruncated;
      break;
    case HttpResponseParser::Error::kNoResponse:
      kind = Kind::kClosedBeforeResponse;
      break;
    default:
      break;
  }
  return {kind, std::string(parser.errorMessage())};
}

}  // namespace

ClientConnection::ClientConnection(HttpClient* client, const PreparedRequest& first,
                                   std::shared_ptr<const ConnectionLayer> layer,
                                   std::shared_ptr<NameResolver> resolver)
    : client_(client),
      originKey_(first.originKey),
      hostPort_(first.url->hostPort()),
      secure_(first.url->secure()),
      parser_(client->options().limits) {
  TcpClient::Options options;
  options.tcpNoDelay = true;
  options.layer = std::move(layer);
  options.resolver = std::move(resolver);
  tcp_ = std::make_unique<TcpClient>(client->loop(), hostPort_, "http:" + originKey_, options);
  // The sink may end the request (a coroutine reader that has read
  // enough): later pieces of the same parse() then go nowhere.
  parser_.setBodySink([this](std::string_view piece) {
    if (state_ != State::kBusy || !exchange_) return;
    exchange_->bodyHanded = true;
    // A sink that throws ends its request (the rest of the body has nowhere
    // to go); the connection is closed, never pooled mid-body.
    if (!callGuarded("HTTP client body sink",
                     [&] { exchange_->request->request.options.bodySink(piece); })) {
      fail({Kind::kCancelled, "the body sink threw; request to " + hostPort_ + " abandoned"},
           false);
    }
  });
}

// The client closes every connection (close(): timers cancelled, socket
// closed) before it lets go of it, and may be gone by the time the queued
// destruction runs: nothing here may reach it.
ClientConnection::~ClientConnection() = default;

void ClientConnection::start(std::shared_ptr<Exchange> exchange) {
  exchange_ = std::move(exchange);
  exchange_->connection = this;
  std::weak_ptr<ClientConnection> weak = weak_from_this();
  tcp_->setConnectionCallback([weak](const TcpConnectionPtr& conn) {
    if (auto self = weak.lock()) self->onConnection(conn);
  });
  tcp_->setMessageCallback([weak](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
    if (auto self = weak.lock()) {
      self->onMessage(conn, buf);
    } else {
      buf->retrieveAll();
    }
  });
  tcp_->setConnectErrorCallback([weak](int error) {
    if (auto self = weak.lock()) self->onConnectError(error);
  });
  tcp_->setConnectFailureCallback([weak](const ConnectFailure& failure) {
    if (auto self = weak.lock()) {
      self->failureText_ = failure.message();
      self->dnsFailure_ = failure.attempts.empty() && failure.layer.empty();
      self->tlsFailure_ = failure.layer;
    }
  });
  const Duration timeout = exchange_->request->request.options.connectTimeout;
  if (timeout > Duration::zero()) {
    connectTimer_ = client_->loop()->runAfter(timeout, [weak] {
      if (auto self = weak.lock()) self->onConnectTimeout();
    });
  }
  tcp_->connect();
}

void ClientConnection::onConnection(const TcpConnectionPtr& conn) {
  if (state_ == State::kClosed) return;
  if (!conn->connected()) {
    onClosed();
    return;
  }
  conn_ = conn;
  tcp_->stop();
  if (connectTimer_.valid()) client_->loop()->cancel(connectTimer_);
  connectTimer_ = TimerId();
  ++client_->stats_.connectionsOpened;
  writeRequest();
}

void ClientConnection::send(std::shared_ptr<Exchange> exchange) {
  exchange_ = std::move(exchange);
  exchange_->connection = this;
  writeRequest();
}

// Asked just before an idle connection takes a request. The connection may
// have heard the server's end already and not be closed yet (a TLS
// close_notify read with the response: on io_uring the close waits for our
// own close_notify to be sent). And the loop hears of a FIN or reset only
// when it next polls, while a server that closes an idle connection may
// have done so a moment ago: recv(MSG_PEEK) sees what is already at the
// socket, whichever backend reads it (an io_uring receive that took bytes
// leaves the FIN or the error visible). EOF, an error, or any byte (an
// answer nobody asked for, a TLS alert) all mean the connection cannot
// carry a request. One system call per reuse.
bool ClientConnection::reusable() const {
  return state_ == State::kIdle && conn_ && conn_->quietAndOpen();
}

void ClientConnection::writeRequest() {
  state_ = State::kBusy;
  const PreparedRequest& prepared = *exchange_->request;
  const RequestOptions& options = prepared.request.options;
  parser_.start(prepared.head);
  parser_.setBodyMode(options.bodySink      ? HttpResponseParser::BodyMode::kStream
                      : options.discardBody ? HttpResponseParser::BodyMode::kDiscard
                                            : HttpResponseParser::BodyMode::kStore);
  reusedRequest_ = sent_ > 0;
  ++sent_;
  HttpClient::Stats& stats = client_->stats_;
  ++stats.requestsSent;
  if (reusedRequest_) ++stats.reusedRequests;
  if (prepared.request.hasFileBody()) {
    const Request& r = prepared.request;
    UniqueFd file(r.bodyFd >= 0 ? ::fcntl(r.bodyFd, F_DUPFD_CLOEXEC, 0)
                                : ::open(r.bodyFile.c_str(), O_RDONLY | O_CLOEXEC));
    if (!file.valid()) {
      const std::string what = r.bodyFd >= 0 ? "body fd" : r.bodyFile;
      fail({Kind::kFile, "cannot open " + what + ": " + std::strerror(errno)}, false);
      return;
    }
    Buffer head;
    head.append(prepared.bytes);
    conn_->sendFile(std::move(file), r.bodyFileOffset, r.bodyLength, &head);
  } else {
    conn_->send(prepared.bytes);
  }
  const Duration idle = options.idleTimeout;
  if (idle > Duration::zero()) {
    lastByte_ = MonoClock::now();
    armIdleTimer(idle);
  }
}

void ClientConnection::armIdleTimer(Duration delay) {
  std::weak_ptr<ClientConnection> weak = weak_from_this();
  idleTimer_ = client_->loop()->runAfter(delay, [weak] {
    if (auto self = weak.lock()) self->onIdleCheck();
  });
}

// One timer per request rather than one per read: each read only stamps the
// time, and the timer, when it fires early, waits out the rest.
void ClientConnection::onIdleCheck() {
  idleTimer_ = TimerId();
  if (state_ != State::kBusy || !exchange_) return;
  const Duration idle = exchange_->request->request.options.idleTimeout;
  const Duration quiet = MonoClock::now() - lastByte_;
  if (quiet < idle) {
    armIdleTimer(idle - quiet);
    return;
  }
  fail({Kind::kIdleTimeout,
        "no byte of the response from " + hostPort_ + " for " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(idle).count()) +
            " ms"},
       false);
}

void ClientConnection::onMessage(const TcpConnectionPtr&, Buffer* buf) {
  if (state_ != State::kBusy) {
    // Bytes while idle: a response nobody asked for; the connection's
    // framing can no longer be trusted.
    buf->retrieveAll();
    if (state_ == State::kIdle) {
      close();
      client_->onIdleClosed(this);
    }
    return;
  }
  if (idleTimer_.valid()) lastByte_ = MonoClock::now();
  while (true) {
    const HttpResponseParser::Result result = parser_.parse(buf);
    if (state_ != State::kBusy) {
      buf->retrieveAll();  // the body sink cancelled the request
      return;
    }
    if (result == HttpResponseParser::Result::kNeedMore) return;
    if (result == HttpResponseParser::Result::kError) {
      fail(parserError(parser_), false);
      return;
    }
    if (!parser_.informational()) break;
    if (parser_.status() == 101) {
      fail({Kind::kMalformed, "unexpected 101 Switching Protocols (no upgrade was asked)"}, false);
      return;
    }
    parser_.continueAfterInterim();  // 100, 103...: the answer follows
  }
  completeResponse(parser_.keepAlive() && buf->readableBytes() == 0);
}

void ClientConnection::completeResponse(bool reusable) {
  cancelTimers();
  std::shared_ptr<Exchange> exchange = std::move(exchange_);
  exchange->connection = nullptr;
  Response response;
  response.status = parser_.status();
  response.reason.assign(parser_.reason());
  response.versionMinor = parser_.versionMinor();
  if (exchange->request->request.options.keepHeaders) {
    response.headers.reserve(parser_.headerCount());
    for (size_t i = 0; i < parser_.headerCount(); ++i) {
      response.headers.emplace_back(parser_.headerName(i), parser_.headerValue(i));
    }
  }
  response.body = parser_.takeBody();
  if (paused_) {
    paused_ = false;
    if (conn_) conn_->startRead();
  }
  if (reusable) {
    state_ = State::kIdle;
    idleSince_ = MonoClock::now();
  } else {
    close();
  }
  client_->onResponse(this, std::move(exchange), std::move(response), reusable);
}

void ClientConnection::onClosed() {
  conn_.reset();
  if (state_ == State::kClosed) return;
  if (state_ == State::kIdle || !exchange_) {
    close();
    client_->onIdleClosed(this);
    return;
  }
  if (state_ == State::kBusy) {
    const HttpResponseParser::Result result = parser_.finish();
    if (result == HttpResponseParser::Result::kComplete) {
      completeResponse(false);
      return;
    }
    const bool nothing = parser_.error() == HttpResponseParser::Error::kNoResponse;
    ClientError error = parserError(parser_);
    error.message += " (" + hostPort_ + ")";
    fail(std::move(error), nothing && reusedRequest_ && !exchange_->bodyHanded);
    return;
  }
  fail({Kind::kClosedBeforeResponse, "connection to " + hostPort_ + " closed while connecting"},
       false);
}

ClientError ClientConnection::connectError(int error) const {
  const std::string detail =
      failureText_.empty() ? hostPort_ + ": " + std::strerror(error) : failureText_;
  if (dnsFailure_ && !failureText_.empty()) return {Kind::kDns, "name lookup failed: " + detail};
  switch (error) {
    case ECONNREFUSED:
      return {Kind::kConnectRefused, "connection refused: " + detail};
    case ETIMEDOUT:
      return {Kind::kConnectTimeout, "connect timed out: " + detail};
    case EPROTO:
      if (secure_) {
        return {Kind::kTls,
                "TLS handshake with " + hostPort_ + " failed: " +
                    (tlsFailure_.empty() ? std::string("protocol error") : tlsFailure_)};
      }
      break;
    default:
      break;
  }
  return {Kind::kConnectFailed, "connect failed: " + detail};
}

void ClientConnection::onConnectError(int error) {
  tcp_->stop();  // no retry: the request fails (or waits for a new connection)
  if (state_ != State::kConnecting) return;
  fail(connectError(error), false);
}

void ClientConnection::onConnectTimeout() {
  connectTimer_ = TimerId();
  if (state_ != State::kConnecting) return;
  fail({Kind::kConnectTimeout, "connect to " + hostPort_ + " (lookup, TCP and TLS) timed out"},
       false);
}

void ClientConnection::fail(ClientError error, bool retryable) {
  std::shared_ptr<Exchange> exchange = std::move(exchange_);
  if (exchange) exchange->connection = nullptr;
  close();
  client_->onFailure(this, std::move(exchange), std::move(error), retryable);
}

void ClientConnection::pauseReading() {
  if (state_ != State::kBusy || !conn_ || paused_) return;
  paused_ = true;
  conn_->stopRead();
}

void ClientConnection::resumeReading() {
  std::weak_ptr<ClientConnection> weak = weak_from_this();
  client_->loop()->queueInLoop([weak] {
    auto self = weak.lock();
    if (!self || !self->paused_) return;
    self->paused_ = false;
    if (self->state_ != State::kBusy || !self->conn_) return;
    // The wait was the reader's, not the server's.
    self->lastByte_ = MonoClock::now();
    self->conn_->startRead();
  });
}

void ClientConnection::abort() {
  if (exchange_) exchange_->connection = nullptr;
  exchange_.reset();
  close();
}

void ClientConnection::close() {
  state_ = State::kClosed;
  cancelTimers();
  tcp_->stop();
  if (conn_) {
    conn_->forceClose();
    conn_.reset();
  }
}

void ClientConnection::cancelTimers() {
  EventLoop* loop = client_->loop();
  if (connectTimer_.valid()) loop->cancel(connectTimer_);
  if (idleTimer_.valid()) loop->cancel(idleTimer_);
  connectTimer_ = TimerId();
  idleTimer_ = TimerId();
}

}  // namespace libnet::http::detail
