#include "net/http/Http1Writer.h"

#include <cstdio>
#include <utility>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/ConnectionAttachment.h"
#include "net/EventLoop.h"
#include "net/TcpConnection.h"
#include "net/http/Http1RequestBody.h"
#include "net/http/HttpDate.h"
#include "net/http/HttpServer.h"
#include "net/http/WriterGate.h"

namespace libnet::http {

namespace {

std::string_view currentDate() {
  thread_local HttpDateCache cache;
  return cache.now();
}

// Tells the writer of the answer under way when the connection's queued
// output moves, so that one held back by write()'s false hears when it may
// go on. Set on the connection only while such an answer is pending (an
// attachment also makes the peer's half-close the writer's to judge: see
// ConnectionAttachment).
class AnswerProgress final : public ConnectionAttachment {
 public:
  AnswerProgress(TcpConnection* conn, std::weak_ptr<Http1Writer> writer)
      : conn_(conn), writer_(std::move(writer)) {}

  void onPeerHalfClosed() override {
    // Queued: called from inside the connection's own handling. A client
    // that ends its side while its answer is pending has gone (as a proxy
    // treats it); one with nothing pending has the usual end.
    conn_->loop()->queueInLoop([weak = conn_->weak_from_this(), writer = writer_] {
      const TcpConnectionPtr conn = weak.lock();
      if (!conn || !conn->connected()) return;
      const std::shared_ptr<Http1Writer> w = writer.lock();
      if (w && !w->ended()) {
        conn->forceClose();
      } else {
        conn->closeAfterOutput();
      }
    });
  }
  void onOutputDrained() override { report(); }
  void onOutputProgress() override { report(); }
  void onClosed() override {}

 private:
  void report() {
    if (const std::shared_ptr<Http1Writer> w = writer_.lock()) {
      w->onOutputProgress(conn_->queuedOutputBytes());
    }
  }

  TcpConnection* const conn_;  // the owner of this attachment
  const std::weak_ptr<Http1Writer> writer_;
};

void appendChunkSize(size_t size, Buffer* out) {
  char digits[24];
  const int n = std::snprintf(digits, sizeof digits, "%zx\r\n", size);
  out->append(std::string_view(digits, static_cast<size_t>(n)));
}

}  // namespace

Http1Writer::Http1Writer(std::shared_ptr<WriterGate> gate, const TcpConnectionPtr& conn,
                         Request request, size_t inlineFileMax, Options options)
    : gate_(std::move(gate)),
      loop_(conn->loop()),
      conn_(conn),
      request_(request),
      inlineFileMax_(inlineFileMax),
      options_(options) {}

Http1Writer::~Http1Writer() {
  if (phase_.load(std::memory_order_acquire) == kEnded) return;
  // Every call posted held this writer, so all of them have run: what the
  // phase says is final. Queued even on the loop: the last owner may let go
  // in the middle of the server's own work on this connection.
  gate_->queue(loop_,
               [weak = conn_, started = phase_.load() == kStreaming] { abandoned(weak, started); });
}

size_t Http1Writer::queuedBytes() const { return queued_.load(std::memory_order_relaxed); }

void Http1Writer::respond(HttpResponse response) {
  gate_->run(loop_, [self = shared_from_this(), r = std::move(response)]() mutable {
    self->respondInLoop(std::move(r));
  });
}

void Http1Writer::start(HttpResponse head) {
  gate_->run(loop_, [self = shared_from_this(), h = std::move(head)]() mutable {
    self->startInLoop(std::move(h));
  });
}

bool Http1Writer::write(std::string data) {
  if (closed()) return false;
  const size_t size = data.size();
  queued_.fetch_add(size, std::memory_order_relaxed);
  const bool open = gate_->run(loop_, [self = shared_from_this(), d = std::move(data)]() mutable {
    self->writeInLoop(std::move(d));
  });
  if (!open) {
    queued_.fetch_sub(size, std::memory_order_relaxed);
    return false;
  }
  if (closed()) return false;
  if (queuedBytes() <= options_.highWater) return true;
  // The loop may have drained below lowWater before the flag was seen: it
  // looks once more, after this.
  wantWritable_.store(true, std::memory_order_release);
  gate_->run(loop_, [self = shared_from_this()] { self->checkWritable(); });
  return false;
}

void Http1Writer::finish() { finish({}); }

void Http1Writer::finish(std::vector<std::pair<std::string, std::string>> trailers) {
  gate_->run(loop_,
             [self = shared_from_this(), t = std::move(trailers)] { self->finishInLoop(t); });
}

void Http1Writer::abort() {
  gate_->run(loop_, [self = shared_from_this()] { self->abortInLoop(); });
}

void Http1Writer::reset(uint32_t) {
  gate_->run(loop_, [self = shared_from_this()] {
    const TcpConnectionPtr conn = self->live();
    if (conn && !self->ended()) self->cutOff(conn, false);
  });
}

void Http1Writer::setWritableCallback(std::function<void()> callback) {
  gate_->run(loop_, [self = shared_from_this(), cb = std::move(callback)]() mutable {
    if (!self->ended()) self->writable_ = std::move(cb);
  });
}

void Http1Writer::setClosedCallback(std::function<void()> callback) {
  gate_->run(loop_, [self = shared_from_this(), cb = std::move(callback)]() mutable {
    // Set after the client left: it still hears of it, once. After any
    // other end it would never run: it is not kept.
    if (self->ended() && !self->clientGone_) return;
    self->closedCallback_ = std::move(cb);
    if (self->clientGone_) self->runClosedCallback();
  });
}

TcpConnectionPtr Http1Writer::live() const {
  TcpConnectionPtr conn = conn_.lock();
  if (!conn || !conn->connected() || phase_.load(std::memory_order_relaxed) == kEnded) {
    return nullptr;
  }
  return conn;
}

void Http1Writer::shape(HttpResponse* response) const {
  const bool close =
      request_.close || response->closeConnection() || HttpServer::drainingConnection(conn_.lock());
  response->setCloseConnection(close);
  if (!close && request_.http10) response->setKeepAliveHeader(true);
}

RequestBodyPtr Http1Writer::requestBody() const { return body_; }

void Http1Writer::setRequestBody(std::shared_ptr<Http1RequestBody> body) {
  body_ = std::move(body);
}

void Http1Writer::respondInLoop(HttpResponse response) {
  const TcpConnectionPtr conn = live();
  if (!conn) return;
  if (phase_.load(std::memory_order_relaxed) != kNew) {
    LOG_ERROR << conn->name() << ": respond() after start(); ignored";
    return;
  }
  // The rest of the body will not be read: the connection closes after it.
  if (body_ && !body_->readThrough()) response.setCloseConnection(true);
  shape(&response);
  Buffer out;
  const bool ok =
      HttpServer::appendResponse(conn, &response, request_.headOnly, inlineFileMax_, &out);
  if (out.readableBytes() > 0) conn->send(&out);
  end(!ok || response.closeConnection());
}

void Http1Writer::startInLoop(HttpResponse head) {
  const TcpConnectionPtr conn = live();
  if (!conn) return;
  if (phase_.load(std::memory_order_relaxed) != kNew) {
    LOG_ERROR << conn->name() << ": start() twice, or after respond(); ignored";
    return;
  }
  const int status = head.status();
  noBody_ = request_.headOnly || status < 200 || status == 204 || status == 304;
  if (head.hasLength()) {
    framing_ = HttpResponse::Framing::kContentLength;
    remaining_ = head.contentLength() - head.body().size();
  } else if (noBody_) {
    framing_ = HttpResponse::Framing::kUntilClose;  // neither field: nothing follows
  } else if (request_.http10) {
    framing_ = HttpResponse::Framing::kUntilClose;
    head.setCloseConnection(true);
  } else {
    framing_ = HttpResponse::Framing::kChunked;
  }
  head.setFraming(framing_);
  shape(&head);
  closeAfter_ = head.closeConnection();
  Buffer out;
  head.appendToBuffer(&out, currentDate(), request_.headOnly);
  conn->send(&out);
  phase_.store(kStreaming, std::memory_order_release);
  noteQueued(conn, 0);
}

void Http1Writer::writeInLoop(std::string data) {
  const size_t size = data.size();
  const TcpConnectionPtr conn = live();
  if (!conn || noBody_ || data.empty()) {
    queued_.fetch_sub(size, std::memory_order_relaxed);
    return;
  }
  if (phase_.load(std::memory_order_relaxed) != kStreaming) {
    queued_.fetch_sub(size, std::memory_order_relaxed);
    LOG_ERROR << conn->name() << ": write() before start(); cut off";
    cutOff(conn, false);
    return;
  }
  if (framing_ == HttpResponse::Framing::kContentLength) {
    if (size > remaining_) {
      queued_.fetch_sub(size, std::memory_order_relaxed);
      LOG_ERROR << conn->name() << ": " << size << " body bytes written where " << remaining_
                << " were owed; cut off";
      cutOff(conn, false);
      return;
    }
    remaining_ -= size;
    conn->send(std::move(data));
  } else if (framing_ == HttpResponse::Framing::kChunked) {
    Buffer chunk(size + 32);
    appendChunkSize(size, &chunk);
    chunk.append(data);
    chunk.append("\r\n");
    conn->send(&chunk);
  } else {
    conn->send(std::move(data));
  }
  noteQueued(conn, size);
}

void Http1Writer::finishInLoop(const std::vector<std::pair<std::string, std::string>>& trailers) {
  const TcpConnectionPtr conn = live();
  if (!conn) return;
  if (phase_.load(std::memory_order_relaxed) != kStreaming) {
    LOG_ERROR << conn->name() << ": finish() before start(); cut off";
    cutOff(conn, false);
    return;
  }
  if (!noBody_ && framing_ == HttpResponse::Framing::kContentLength && remaining_ > 0) {
    LOG_ERROR << conn->name() << ": finished " << remaining_
              << " bytes short of the announced length; cut off";
    cutOff(conn, false);
    return;
  }
  if (!noBody_ && framing_ == HttpResponse::Framing::kChunked) conn->send(lastChunk(trailers));
  end(closeAfter_ || (!noBody_ && framing_ == HttpResponse::Framing::kUntilClose));
}

std::string Http1Writer::lastChunk(
    const std::vector<std::pair<std::string, std::string>>& trailers) {
  std::string out = "0\r\n";
  for (const auto& [name, value] : trailers) {
    // As HttpResponse::addHeader() keeps a field from splitting the answer.
    const size_t at = out.size();
    out.append(name).append(": ").append(value);
    for (size_t i = at; i < out.size(); ++i) {
      char& c = out[i];
      if (c == '\r' || c == '\n' || c == '\0' || (i < at + name.size() && c == ':')) c = ' ';
    }
    out.append("\r\n");
  }
  out.append("\r\n");
  return out;
}

void Http1Writer::abortInLoop() {
  const TcpConnectionPtr conn = live();
  if (!conn) return;
  if (phase_.load(std::memory_order_relaxed) == kNew) {
    HttpResponse failure(true);
    failure.setStatusPage(500);
    respondInLoop(std::move(failure));
    return;
  }
  cutOff(conn, false);
}

void Http1Writer::refuseInLoop(int status) {
  const TcpConnectionPtr conn = live();
  if (!conn) return;
  if (phase_.load(std::memory_order_relaxed) == kNew) {
    HttpResponse failure(true);
    failure.setStatusPage(status);
    respondInLoop(std::move(failure));
    return;
  }
  cutOff(conn, false);
}

void Http1Writer::end(bool close) {
  phase_.store(kEnded, std::memory_order_release);
  closeAfter_ = close;
  // The callbacks often hold this writer (a producer that writes on): let
  // them go now that they can never run, or the two would keep each other.
  writable_ = nullptr;
  if (!clientGone_) closedCallback_ = nullptr;
  const TcpConnectionPtr conn = conn_.lock();
  if (!conn) return;
  if (conn->attachment() != nullptr && dynamic_cast<AnswerProgress*>(conn->attachment())) {
    conn->setAttachment(nullptr);
  }
  if (handedOff_) HttpServer::answerEnded(conn, close);
}

void Http1Writer::cutOff(const TcpConnectionPtr& conn, bool clientGone) {
  if (ended()) return;  // a callback that threw after ending it
  closed_.store(true, std::memory_order_release);
  clientGone_ = clientGone;
  // Ended before any callback runs: a finish() from the closed callback must
  // find nothing to finish. Whatever part was sent stays short of what its
  // framing promised (no last chunk, or short of its Content-Length), and
  // the close tells the client so.
  end(true);
  if (!clientGone) return;
  conn->forceClose();
  runClosedCallback();
}

void Http1Writer::seen(size_t connQueued, size_t taken) {
  // One atomic step from "written, on its way" to "queued on the
  // connection": a reader never sees the bytes twice, nor not at all.
  queued_.fetch_add(connQueued - lastConnQueued_ - taken, std::memory_order_relaxed);
  lastConnQueued_ = connQueued;
}

void Http1Writer::noteQueued(const TcpConnectionPtr& conn, size_t taken) {
  const size_t queued = conn->queuedOutputBytes();
  seen(queued, taken);
  if (options_.maxQueued != 0 && queued > options_.maxQueued) {
    LOG_DEBUG << conn->name() << ": " << queued << " bytes of an answer queued; cut off";
    cutOff(conn, true);
    return;
  }
  if (queued > options_.lowWater && conn->attachment() == nullptr) {
    conn->setAttachment(std::make_shared<AnswerProgress>(conn.get(), weak_from_this()));
  }
}

void Http1Writer::onOutputProgress(size_t queued) {
  seen(queued, 0);
  if (queued <= options_.lowWater && wantWritable_.load(std::memory_order_acquire)) {
    // Not from inside the connection's output handling: the callback writes.
    gate_->queue(loop_, [self = shared_from_this()] { self->checkWritable(); });
  }
}

void Http1Writer::checkWritable() {
  const TcpConnectionPtr conn = live();
  if (!conn) return;
  seen(conn->queuedOutputBytes(), 0);
  if (queuedBytes() > options_.lowWater) return;
  if (!wantWritable_.exchange(false, std::memory_order_acq_rel)) return;
  if (!writable_) return;
  // A copy: the callback may replace itself.
  const std::function<void()> callback = writable_;
  if (!callGuarded("writable callback", callback)) cutOff(conn, false);
}

void Http1Writer::onConnectionClosed() {
  closed_.store(true, std::memory_order_release);
  if (phase_.load(std::memory_order_relaxed) == kEnded) return;
  phase_.store(kEnded, std::memory_order_release);
  clientGone_ = true;
  writable_ = nullptr;
  runClosedCallback();
}

void Http1Writer::runClosedCallback() {
  if (closedCalled_ || !closedCallback_) return;
  closedCalled_ = true;
  // Moved out: it runs once, and may replace itself.
  const std::function<void()> callback = std::move(closedCallback_);
  callGuarded("closed callback", callback);
}

void Http1Writer::abandoned(const std::weak_ptr<TcpConnection>& weakConn, bool started) {
  const TcpConnectionPtr conn = weakConn.lock();
  if (!conn || !conn->connected()) return;
  if (!started) {
    HttpResponse failure(true);
    failure.setStatusPage(500);
    Buffer out;
    failure.appendToBuffer(&out, currentDate());
    conn->send(&out);
  }
  HttpServer::answerEnded(conn, true);
}

}  // namespace libnet::http
