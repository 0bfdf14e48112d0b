#include "net/http/Http1RequestBody.h"

#include <utility>

#include "base/Guarded.h"
#include "net/EventLoop.h"
#include "net/TcpConnection.h"
#include "net/http/Http1Writer.h"
#include "net/http/HttpServer.h"
#include "net/http/WriterGate.h"

namespace libnet::http {

Http1RequestBody::Http1RequestBody(std::shared_ptr<WriterGate> gate, const TcpConnectionPtr& conn,
                                   int64_t contentLength, bool expectContinue)
    : gate_(std::move(gate)),
      conn_(conn),
      contentLength_(contentLength),
      expectContinue_(expectContinue) {}

void Http1RequestBody::setDataCallback(DataCallback callback) {
  if (ended_) return;
  const bool first = !data_;
  data_ = std::move(callback);
  if (first && data_) {
    sendContinue();
    kick();
  }
}

void Http1RequestBody::setEndCallback(EndCallback callback) {
  if (!ended_) {
    endCallback_ = std::move(callback);
    return;
  }
  // Set after the end (an answer given before the body was asked for): it
  // still hears how the body ended, once.
  if (callback) callGuarded("request body end callback", [&] { callback(end_); });
}

void Http1RequestBody::pause() { paused_ = true; }

void Http1RequestBody::resume() {
  if (!paused_) return;
  paused_ = false;
  kick();
}

void Http1RequestBody::sendContinue() {
  // As nginx does: the client that waits for the go-ahead gets it only once
  // the handler asks for the body, so a handler that answers 4xx without
  // reading never receives it.
  if (!expectContinue_ || contentLength_ == 0) return;
  expectContinue_ = false;
  const std::shared_ptr<Http1Writer> writer = writer_.lock();
  if (writer && writer->started()) return;  // the answer is already on its way
  const TcpConnectionPtr conn = conn_.lock();
  if (conn && conn->connected()) conn->send(std::string_view("HTTP/1.1 100 Continue\r\n\r\n"));
}

void Http1RequestBody::kick() {
  if (kicked_ || ended_ || holding()) return;
  const TcpConnectionPtr conn = conn_.lock();
  if (!conn) return;
  kicked_ = true;
  // Queued, never from here: the caller may be the data callback, inside
  // the server's own delivery.
  gate_->queue(conn->loop(), [self = shared_from_this()] { self->wake(); });
}

void Http1RequestBody::wake() {
  kicked_ = false;
  if (ended_ || holding()) return;
  if (const TcpConnectionPtr conn = conn_.lock()) HttpServer::bodyWanted(conn);
}

bool Http1RequestBody::deliver(std::string_view piece) {
  received_ += piece.size();
  // A copy: the callback may replace itself.
  const DataCallback callback = data_;
  return callGuarded("request body data callback", [&] { callback(piece); });
}

void Http1RequestBody::end(End end) {
  if (ended_) return;
  ended_ = true;
  end_ = end;
  data_ = nullptr;
  // Moved out: it runs once, and often holds the writer that holds this.
  const EndCallback callback = std::move(endCallback_);
  endCallback_ = nullptr;
  if (callback) callGuarded("request body end callback", [&] { callback(end); });
}

}  // namespace libnet::http
