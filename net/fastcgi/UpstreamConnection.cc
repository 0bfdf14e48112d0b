#include "net/fastcgi/UpstreamConnection.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/fastcgi/Exchange.h"
#include "net/fastcgi/UpstreamPool.h"

namespace libnet::fastcgi {

namespace {

// The request goes out a piece at a time, the next once the last has
// drained: the connection's output holds at most this much of a large body,
// and each drained piece is progress for the send timeout.
constexpr size_t kSendPiece = 256 * 1024;

// Every request on a connection is request 1: php-fpm (like most FastCGI
// applications) does not multiplex.
constexpr uint16_t kRequestId = 1;

}  // namespace

UpstreamConnection::UpstreamConnection(EventLoop* loop, UpstreamPool* pool,
                                       const UpstreamOptions& options)
    : loop_(loop), pool_(pool), options_(options) {
  TcpClient::Options tcpOptions;
  tcpOptions.tcpNoDelay = true;
  tcp_ = std::make_unique<TcpClient>(loop, options.address, "fastcgi", tcpOptions);
}

UpstreamConnection::~UpstreamConnection() = default;

void UpstreamConnection::start(std::shared_ptr<Exchange> exchange) {
  exchange_ = std::move(exchange);
  exchange_->setConnection(this);
  std::weak_ptr<UpstreamConnection> weak = weak_from_this();
  tcp_->setConnectionCallback([weak](const TcpConnectionPtr& conn) {
    if (auto self = weak.lock()) self->onConnection(conn);
  });
  tcp_->setMessageCallback([weak](const TcpConnectionPtr&, Buffer* buf, Timestamp) {
    if (auto self = weak.lock()) {
      self->onMessage(buf);
    } else {
      buf->retrieveAll();
    }
  });
  tcp_->setConnectErrorCallback([weak](int error) {
    if (auto self = weak.lock()) self->onConnectError(error);
  });
  tcp_->setWriteCompleteCallback([weak](const TcpConnectionPtr&) {
    if (auto self = weak.lock()) self->onWriteComplete();
  });
  started_ = MonoClock::now();
  armTimer(options_.connectTimeout);
  tcp_->connect();
}

void UpstreamConnection::onConnectError(int error) {
  if (state_ != State::kConnecting) return;
  tcp_->stop();
  failExchange(error == ETIMEDOUT ? 504 : 502,
               "cannot connect to " + options_.address.toString() + ": " + std::strerror(error));
}

void UpstreamConnection::onConnection(const TcpConnectionPtr& conn) {
  if (state_ == State::kClosed) return;
  if (!conn->connected()) {
    onClosed();
    return;
  }
  conn_ = conn;
  tcp_->stop();
  state_ = State::kBusy;
  run();
}

void UpstreamConnection::send(std::shared_ptr<Exchange> exchange) {
  exchange_ = std::move(exchange);
  exchange_->setConnection(this);
  reused_ = true;
  state_ = State::kBusy;
  run();
}

void UpstreamConnection::run() {
  sent_ = 0;
  writing_ = false;
  paused_ = false;
  received_ = false;
  decoder_ = RecordDecoder();
  lastProgress_ = MonoClock::now();
  armTimer(std::min(options_.sendTimeout, options_.readTimeout));
  sendMore();
}

void UpstreamConnection::sendMore() {
  const std::string& request = exchange_->request();
  if (sent_ >= request.size()) {
    // A streamed body: what has come of it, once the last piece drained.
    std::string stdinRecords = exchange_->takeStdin();
    if (stdinRecords.empty()) return;
    writing_ = true;
    conn_->send(std::move(stdinRecords));
    return;
  }
  const size_t n = std::min(kSendPiece, request.size() - sent_);
  writing_ = true;
  const size_t from = sent_;
  sent_ += n;
  conn_->send(std::string_view(request).substr(from, n));
}

void UpstreamConnection::stdinReady() {
  if (state_ != State::kBusy || !exchange_ || writing_) return;
  lastProgress_ = MonoClock::now();  // the send timeout counts from here
  sendMore();
}

void UpstreamConnection::onWriteComplete() {
  if (state_ != State::kBusy || !exchange_) return;
  writing_ = false;
  lastProgress_ = MonoClock::now();
  sendMore();
}

void UpstreamConnection::onMessage(Buffer* buf) {
  if (state_ != State::kBusy || !exchange_) {
    // Bytes while idle: nobody asked; the framing cannot be trusted.
    buf->retrieveAll();
    if (state_ == State::kIdle) {
      close();
      pool_->onClosed(this);
    }
    return;
  }
  received_ = true;
  lastProgress_ = MonoClock::now();
  while (!exchange_->ended()) {
    Record record;
    size_t used = 0;
    const RecordDecoder::Status status = decoder_.decode(buf->view(), &record, &used);
    if (status == RecordDecoder::Status::kNeedMore) break;
    if (status == RecordDecoder::Status::kError) {
      failExchange(502, "garbage from the application: " + decoder_.error());
      return;
    }
    const bool ok = handleRecord(record);
    if (!ok) return;
    buf->retrieve(used);
  }
  const bool more = exchange_->flush();
  if (state_ != State::kBusy) return;  // the client left while being written to
  if (exchange_->ended()) {
    if (buf->readableBytes() > 0) {
      failExchange(502, "bytes after the end of the request");
      return;
    }
    endExchange();
    return;
  }
  if (!more) {
    paused_ = true;
    conn_->stopRead();
  }
}

bool UpstreamConnection::handleRecord(const Record& record) {
  if (record.requestId != kRequestId) {
    failExchange(502, "a record for request " + std::to_string(record.requestId) +
                          " (only request 1 was sent)");
    return false;
  }
  switch (record.type) {
    case RecordType::kStdout:
      if (!record.content.empty() && !exchange_->onStdout(record.content)) {
        failExchange(502, "the answer is broken");
        return false;
      }
      return true;
    case RecordType::kStderr:
      exchange_->onStderr(record.content);
      return true;
    case RecordType::kEndRequest: {
      EndRequest end;
      if (!RecordDecoder::decodeEndRequest(record.content, &end)) {
        failExchange(502, "a malformed FCGI_END_REQUEST");
        return false;
      }
      exchange_->onEnd(end);
      return true;
    }
    default:
      failExchange(502,
                   "an unexpected record of type " + std::to_string(static_cast<int>(record.type)));
      return false;
  }
}

void UpstreamConnection::endExchange() {
  std::shared_ptr<Exchange> exchange = std::move(exchange_);
  exchange->setConnection(nullptr);
  // Answered before its streamed body was all sent: the application would
  // read the rest as the next request's records.
  if (conn_->peerClosed() || !conn_->connected() || !exchange->stdinComplete() || writing_) {
    close();
    pool_->onClosed(this);
    return;
  }
  state_ = State::kIdle;
  lastProgress_ = MonoClock::now();
  armTimer(options_.idleTimeout);
  pool_->onIdle(this);
}

void UpstreamConnection::failExchange(int status, const std::string& why) {
  std::shared_ptr<Exchange> exchange = std::move(exchange_);
  close();
  if (exchange) {
    exchange->setConnection(nullptr);
    exchange->fail(status, why);
  }
  pool_->onClosed(this);
}

void UpstreamConnection::onClosed() {
  if (state_ == State::kClosed) return;
  if (state_ != State::kBusy || !exchange_) {
    close();
    pool_->onClosed(this);
    return;
  }
  // A kept connection the application closed while it sat idle (php-fpm's
  // pm.max_requests, a restart) fails the first request sent on it with no
  // answer at all: that one is sent again on a new connection, unless it
  // may have had an effect (not idempotent).
  if (reused_ && !received_ && !exchange_->done() && exchange_->idempotent() &&
      !exchange_->retried()) {
    std::shared_ptr<Exchange> exchange = std::move(exchange_);
    exchange->setConnection(nullptr);
    exchange->setRetried();
    close();
    pool_->onClosed(this);
    pool_->submit(std::move(exchange));
    return;
  }
  failExchange(502, received_ ? "the application closed the connection mid-answer"
                              : "the application closed the connection without answering");
}

void UpstreamConnection::abandon() {
  if (state_ != State::kBusy && state_ != State::kConnecting) return;
  close();
  pool_->onClosed(this);
}

void UpstreamConnection::resumeReading() {
  if (state_ != State::kBusy || !paused_) return;
  paused_ = false;
  lastProgress_ = MonoClock::now();
  std::weak_ptr<UpstreamConnection> weak = weak_from_this();
  loop_->queueInLoop([weak] {
    auto self = weak.lock();
    if (self && self->state_ == State::kBusy && !self->paused_) self->conn_->startRead();
  });
}

// As HttpClient's pool does before each reuse: the loop hears of a FIN only
// when it next polls, and php-fpm may have closed this connection a moment
// ago; recv(MSG_PEEK) sees what is already at the socket. One system call.
bool UpstreamConnection::reusable() const {
  return state_ == State::kIdle && conn_ && conn_->quietAndOpen();
}

void UpstreamConnection::close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  if (timer_.valid()) loop_->cancel(timer_);
  timer_ = TimerId();
  tcp_->stop();
  if (exchange_) {
    exchange_->setConnection(nullptr);
    exchange_.reset();
  }
  if (conn_) conn_->forceClose();
}

// Makes the timer fire no later than `delay` from now. A timer already due
// sooner stays: it recomputes what is left when it fires (onTimer), so that
// a request on a kept connection costs no timer update at all.
void UpstreamConnection::armTimer(Duration delay) {
  const MonoTime when = MonoClock::now() + delay;
  if (timer_.valid()) {
    if (timerAt_ <= when) return;
    loop_->cancel(timer_);
  }
  std::weak_ptr<UpstreamConnection> weak = weak_from_this();
  timerAt_ = when;
  timer_ = loop_->runAt(when, [weak] {
    if (auto self = weak.lock()) self->onTimer();
  });
}

Duration UpstreamConnection::timeLeft(MonoTime now) const {
  switch (state_) {
    case State::kConnecting:
      return started_ + options_.connectTimeout - now;
    case State::kIdle:
      return lastProgress_ + options_.idleTimeout - now;
    case State::kBusy: {
      // The client is slow (reading the answer, or sending the body), not the
      // application.
      if (paused_ || (!writing_ && exchange_->awaitingClient())) return options_.readTimeout;
      const bool sending = writing_ || sent_ < exchange_->request().size();
      return lastProgress_ + (sending ? options_.sendTimeout : options_.readTimeout) - now;
    }
    case State::kClosed:
      break;
  }
  return Duration::max();
}

// One timer per connection rather than one per event: events only stamp the
// time, and the timer, when it fires early, waits out the rest.
void UpstreamConnection::onTimer() {
  timer_ = TimerId();
  if (state_ == State::kClosed) return;
  const Duration left = timeLeft(MonoClock::now());
  if (left > Duration::zero()) {
    armTimer(left);
    return;
  }
  switch (state_) {
    case State::kConnecting:
      tcp_->stop();
      failExchange(504, "connecting to " + options_.address.toString() + " timed out");
      return;
    case State::kIdle:
      close();
      pool_->onClosed(this);
      return;
    default: {
      const bool sending = writing_ || sent_ < exchange_->request().size();
      failExchange(504, sending ? "sending the request to the application timed out"
                                : "the application did not answer in time");
      return;
    }
  }
}

}  // namespace libnet::fastcgi
