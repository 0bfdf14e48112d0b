// Http1Writer: the ResponseWriter of one HTTP/1.1 request answered by an
// asynchronous handler (HttpServer::setAsyncHandler). HttpServer makes it on
// the connection's loop, hands it to the handler, and, when the handler
// returns before the answer is complete, parks the connection (requests
// pipelined behind it wait in its input) until the writer ends the answer.
//
// Ownership: the handler (and whoever it gives the pointer to) owns the
// writer; the connection's state holds only a weak_ptr to it, and the writer
// only a weak_ptr to its connection, so neither keeps the other alive. Calls
// reach the loop through the server's WriterGate (WriterGate.h): on the
// loop's thread at once, from any other through its queue, in call order;
// once the server is destroyed they do nothing. Every call posted holds the
// writer, so the destructor runs after the last of them has run (or been
// dropped with its loop); a writer destroyed before its answer ended queues
// the cut-off (a 500, or the connection's close) with what it knew.
//
// The rest of the state (the phase, the framing, the callbacks) is the
// loop's alone; closed(), queuedBytes() and what write() returns come from
// atomics the loop keeps up to date.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/Callbacks.h"
#include "net/http/HttpResponse.h"
#include "net/http/ResponseWriter.h"

namespace libnet::http {

class Http1RequestBody;
class WriterGate;

class Http1Writer final : public ResponseWriter, public std::enable_shared_from_this<Http1Writer> {
 public:
  // What the request decides about its answer.
  struct Request {
    bool headOnly = false;  // HEAD: a head, never a body
    bool close = false;     // the answer says Connection: close
    bool http10 = false;    // no chunks; "Connection: keep-alive" to keep it
  };

  Http1Writer(std::shared_ptr<WriterGate> gate, const TcpConnectionPtr& conn, Request request,
              size_t inlineFileMax, Options options);
  ~Http1Writer() override;
  Http1Writer(const Http1Writer&) = delete;
  Http1Writer& operator=(const Http1Writer&) = delete;

  void respond(HttpResponse response) override;
  void start(HttpResponse head) override;
  bool write(std::string data) override;
  void finish() override;
  // Trailers go in the chunked body's trailer section; any other framing
  // has none, and they are dropped.
  void finish(std::vector<std::pair<std::string, std::string>> trailers) override;
  void abort() override;
  // No streams: an answer not complete is cut off (no 500 made up), a
  // complete one stands.
  void reset(uint32_t http2ErrorCode) override;
  void setWritableCallback(std::function<void()> callback) override;
  void setClosedCallback(std::function<void()> callback) override;
  [[nodiscard]] bool closed() const override { return closed_.load(std::memory_order_acquire); }
  [[nodiscard]] size_t queuedBytes() const override;
  [[nodiscard]] EventLoop* loop() const override { return loop_; }
  [[nodiscard]] RequestBodyPtr requestBody() const override;

  // HttpServer's side, on the loop.
  // The request's body in pieces (Route::kStreamedBody). An answer given
  // whole (respond()) before it is read through says Connection: close.
  void setRequestBody(std::shared_ptr<Http1RequestBody> body);
  // Something of the answer has been sent (or it is over).
  [[nodiscard]] bool started() const { return phase_.load(std::memory_order_relaxed) != kNew; }
  // The request cannot be served on (its streamed body broke off, or was
  // too large): `status` if nothing was sent yet, else the cut-off.
  void refuseInLoop(int status);
  // The answer is over (whole, or cut off).
  [[nodiscard]] bool ended() const { return phase_.load(std::memory_order_relaxed) == kEnded; }
  // It ended in a way that closes the connection.
  [[nodiscard]] bool closesConnection() const { return closeAfter_; }
  // The handler has returned with the answer unfinished: its end now goes
  // to HttpServer::answerEnded(), which resumes the connection.
  void handOff() { handedOff_ = true; }
  // The connection went down (the client left, a deadline, the server's
  // drain or destruction): the closed callback, once.
  void onConnectionClosed();
  // Queued output moved (the connection's attachment): the writable
  // callback once it is back under lowWater.
  void onOutputProgress(size_t queued);
  // A handler threw: a 500 if nothing was sent, else the cut-off.
  void abortInLoop();

 private:
  enum Phase : uint8_t { kNew, kStreaming, kEnded };

  // The connection, if still there to be written to.
  [[nodiscard]] TcpConnectionPtr live() const;
  void respondInLoop(HttpResponse response);
  void startInLoop(HttpResponse head);
  void writeInLoop(std::string data);
  void finishInLoop(const std::vector<std::pair<std::string, std::string>>& trailers);
  // The last chunk, with the trailer section.
  static std::string lastChunk(const std::vector<std::pair<std::string, std::string>>& trailers);
  // Headers of `response` as this request and the connection want them.
  void shape(HttpResponse* response) const;
  // The answer is complete: tell the server, unless the handler is still
  // running (it finds out itself).
  void end(bool close);
  // An answer that cannot be completed: the connection closes without it.
  // `clientGone`: the client is the cause (too slow): the connection closes
  // now and the closed callback runs.
  void cutOff(const TcpConnectionPtr& conn, bool clientGone);
  // The connection's queued output is `connQueued`, `taken` bytes of which
  // were on their way until now.
  void seen(size_t connQueued, size_t taken);
  void noteQueued(const TcpConnectionPtr& conn, size_t taken);
  void checkWritable();
  void runClosedCallback();
  // A writer gone before the end of its answer (queued by the destructor).
  static void abandoned(const std::weak_ptr<TcpConnection>& weakConn, bool started);

  const std::shared_ptr<WriterGate> gate_;
  EventLoop* const loop_;
  const std::weak_ptr<TcpConnection> conn_;
  const Request request_;
  const size_t inlineFileMax_;
  const Options options_;

  std::atomic<uint8_t> phase_{kNew};
  std::atomic<bool> closed_{false};
  std::atomic<bool> wantWritable_{false};  // write() said false: the callback is owed
  // Written and not yet sent: on the way to the loop, plus the connection's
  // queued output as last seen (lastConnQueued_).
  std::atomic<size_t> queued_{0};

  // Loop thread only.
  HttpResponse::Framing framing_ = HttpResponse::Framing::kContentLength;
  size_t remaining_ = 0;  // body bytes still owed (Content-Length)
  size_t lastConnQueued_ = 0;
  bool noBody_ = false;  // HEAD, 204, 304: writes are dropped
  bool closeAfter_ = false;
  bool handedOff_ = false;
  bool clientGone_ = false;  // the closed callback is owed
  bool closedCalled_ = false;
  std::function<void()> writable_;
  std::function<void()> closedCallback_;
  std::shared_ptr<Http1RequestBody> body_;  // set before the handler runs
};

}  // namespace libnet::http
