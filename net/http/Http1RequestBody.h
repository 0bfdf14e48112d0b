// Http1RequestBody: the RequestBody of one HTTP/1.1 request whose router
// asked for its body in pieces (HttpServer::Route::kStreamedBody).
// HttpServer makes it when the request's head is complete and hands it out
// through the request's Http1Writer (ResponseWriter::requestBody()).
//
// The bytes never pass through here on their way in: the server's parser
// leaves them in the connection's input, and HttpServer::feedBody() hands
// each piece to deliver() straight from there while holding() is false;
// when it is true the server stops reading the connection (TCP flow control
// then holds the client back) and the bytes wait in the input, at most
// about one read of them. pause() only sets the flag; resume() and the
// first setDataCallback() ask the server, through the loop's queue (never
// from inside the caller), to deliver what waits and read on.
//
// Ownership: the writer (and so the handler) and, while the body arrives,
// the connection's state hold it; it holds only weak_ptrs to the connection
// and to the writer, and its callbacks only until it ends. Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "net/Callbacks.h"
#include "net/http/RequestBody.h"

namespace libnet::http {

class Http1Writer;
class WriterGate;

class Http1RequestBody final : public RequestBody,
                               public std::enable_shared_from_this<Http1RequestBody> {
 public:
  // `contentLength`: the parser's announcedLength(). `expectContinue`: the
  // client waits for "100 Continue" before sending the body.
  Http1RequestBody(std::shared_ptr<WriterGate> gate, const TcpConnectionPtr& conn,
                   int64_t contentLength, bool expectContinue);
  Http1RequestBody(const Http1RequestBody&) = delete;
  Http1RequestBody& operator=(const Http1RequestBody&) = delete;

  void setDataCallback(DataCallback callback) override;
  void setEndCallback(EndCallback callback) override;
  void pause() override;
  void resume() override;
  [[nodiscard]] int64_t contentLength() const override { return contentLength_; }
  [[nodiscard]] uint64_t received() const override { return received_; }
  [[nodiscard]] bool ended() const override { return ended_; }

  // HttpServer's side.
  // The writer of the same request: "100 Continue" goes out only while its
  // answer has not started.
  void setWriter(std::weak_ptr<Http1Writer> writer) { writer_ = std::move(writer); }
  // Delivery waits: no data callback yet, or paused.
  [[nodiscard]] bool holding() const { return paused_ || !data_; }
  // Nothing is left to read of it on the connection: it has ended, or the
  // request has no body at all.
  [[nodiscard]] bool readThrough() const { return ended_ || contentLength_ == 0; }
  // A piece for the data callback; false if the callback threw (the
  // connection is then closed).
  bool deliver(std::string_view piece);
  // The end, once; the callbacks are let go.
  void end(End end);

 private:
  // Asks the server, through the loop's queue, to deliver what waits.
  void kick();
  void wake();
  void sendContinue();

  const std::shared_ptr<WriterGate> gate_;
  const std::weak_ptr<TcpConnection> conn_;
  const int64_t contentLength_;
  bool expectContinue_;
  std::weak_ptr<Http1Writer> writer_;
  DataCallback data_;
  EndCallback endCallback_;
  uint64_t received_ = 0;
  End end_ = End::kComplete;
  bool ended_ = false;
  bool paused_ = false;
  bool kicked_ = false;  // a wake() is queued
};

}  // namespace libnet::http
