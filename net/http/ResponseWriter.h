// http::ResponseWriter: an answer that comes later, in pieces. An
// asynchronous handler (HttpServer::setAsyncHandler) gets the request and a
// writer, returns at once, and answers whenever it is ready: from the
// connection's loop, or from any other thread (every member may be called
// from any thread; work is carried to the loop through its queue, in call
// order).
//
//   server.setAsyncHandler([&db](const HttpRequest& request, ResponseWriterPtr writer) {
//     db.query(request.path(), [writer](std::string rows) {   // any thread, later
//       HttpResponse head(false);
//       head.setContentType("application/json");
//       writer->start(std::move(head));   // no length set: streamed
//       writer->write(std::move(rows));
//       writer->finish();
//     });
//   });
//
// Framing: a head with a known length (HttpResponse::setBody or
// setContentLength) is sent with Content-Length and exactly that many body
// bytes must follow; without one, HTTP/1.1 sends the body chunked (to an
// HTTP/1.0 client: until the connection closes) and HTTP/2 as DATA frames
// until finish(). HEAD, 1xx, 204 and 304 answers carry no body: writes are
// dropped. A writer that is destroyed, or abort()ed,
// before finish() never passes a half answer off as whole: HTTP/1.1 closes
// the connection without the last chunk (or short of its Content-Length),
// HTTP/2 resets the stream (RST_STREAM INTERNAL_ERROR); before start() it is
// a 500 when nothing was sent yet.
//
// Back-pressure: write() queues its bytes on the connection (or stream) and
// returns false once more than Options::highWater is waiting to be sent to
// this client; the writer's owner should then stop producing until the
// writable callback runs (on the loop, once what waits has drained to
// lowWater). A writer that ignores it is cut off past Options::maxQueued
// (the client is too slow: abort() and the closed callback).
//
// The client going away (close, reset, RST_STREAM, the server's drain
// deadline, a write error) before the answer is complete runs the closed
// callback once, on the loop (also when it is set after the client left);
// from then on writes are dropped and return false, and closed() is true.
// The writer's own abort() and a complete answer run no closed callback.
// Once the answer has ended, the writer lets go of both callbacks (so that
// a producer they hold, which holds the writer, is freed with it).
//
// docs/http-server.md has the whole model, with a coroutine form
// (http::coroHandler, co_await http::write) in //net/http:server_coro.
//
// With HTTP/1.1, requests pipelined behind one being answered later wait
// until it is finished (answers go out in request order).
//
// Trailers (finish(trailers)): fields sent after the body. HTTP/2 sends them
// as a HEADERS frame with END_STREAM after the last DATA frame; HTTP/1.1 as
// the trailer section of a chunked body, and drops them when the body is not
// chunked. respondTrailersOnly() is the answer of one HEADERS frame with
// END_STREAM and no body (gRPC's "trailers-only" answer); reset() ends an
// HTTP/2 stream with RST_STREAM and a chosen error code (gRPC's CANCEL).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/http/HttpResponse.h"
#include "net/http/RequestBody.h"

namespace libnet {
class EventLoop;
}

namespace libnet::http {

class ResponseWriter {
 public:
  struct Options {
    size_t highWater = 256 * 1024;
    size_t lowWater = 64 * 1024;
    // 0: no cut-off.
    size_t maxQueued = 16 * 1024 * 1024;
  };

  virtual ~ResponseWriter() = default;

  // The whole answer at once, as a synchronous handler fills it (a body, a
  // file, or none); nothing may follow. Once, instead of start().
  virtual void respond(HttpResponse response) = 0;

  // The status and fields of an answer whose body follows in pieces: with
  // the length announced by HttpResponse::setContentLength(), or, without
  // one, chunked (HTTP/1.1) / DATA frames (HTTP/2) until finish(). Once.
  virtual void start(HttpResponse head) = 0;
  // Body bytes, after start(). False: the client is past highWater (wait for
  // the writable callback) or gone (closed()).
  virtual bool write(std::string data) = 0;
  // The end of the body. Once, after start().
  virtual void finish() = 0;
  // The end of the body followed by trailer fields, in order (names are sent
  // lower-cased over HTTP/2; connection-specific fields are dropped, as in a
  // head). Once, after start(), instead of finish(). The default (a writer
  // that cannot send trailers) drops them and finishes.
  virtual void finish(std::vector<std::pair<std::string, std::string>> trailers) {
    static_cast<void>(trailers);
    finish();
  }
  // Ends the answer as failed (see the file comment). Any time; idempotent.
  virtual void abort() = 0;

  // The whole answer as its head alone: no body, no Content-Length. HTTP/2
  // sends one HEADERS frame with END_STREAM (the status and the head's fields
  // together, as gRPC's trailers-only answer wants); HTTP/1.1 answers the
  // head with an empty body. Once, instead of respond()/start(); a body set
  // on `head` is dropped. The default answers through respond().
  virtual void respondTrailersOnly(HttpResponse head) {
    head.setBody(std::string());
    respond(std::move(head));
  }
  // Ends the answer with an HTTP/2 stream error code (RFC 9113 7: 0x8 is
  // CANCEL; abort() is reset(0x2), INTERNAL_ERROR). Any time, any thread;
  // idempotent. Before the answer is complete the stream is reset at once and
  // nothing more of the answer goes out (no 500 is made up). After finish()
  // or respond*(), the answer goes out whole first and RST_STREAM follows it
  // if the client has not ended its request yet (so it stops sending). The
  // writer's own reset() runs no closed callback. HTTP/1.1 has no streams:
  // an answer not yet complete is cut off (the connection closes), a
  // complete one stands. The default is abort().
  virtual void reset(uint32_t http2ErrorCode) {
    static_cast<void>(http2ErrorCode);
    abort();
  }

  // Runs on the loop when the writer can take more after write() said false.
  virtual void setWritableCallback(std::function<void()> callback) = 0;
  // Runs once on the loop when the client has gone (file comment).
  virtual void setClosedCallback(std::function<void()> callback) = 0;

  // Any thread; a snapshot.
  [[nodiscard]] virtual bool closed() const = 0;
  // Bytes written and not yet handed to the socket; any thread, a snapshot.
  [[nodiscard]] virtual size_t queuedBytes() const = 0;
  // The connection's loop: callbacks run there.
  [[nodiscard]] virtual EventLoop* loop() const = 0;
  // The request's body in pieces (RequestBody.h) when the router asked for
  // it (HttpServer::Route::kStreamedBody); null otherwise (the body is
  // in the request). Loop thread.
  [[nodiscard]] virtual RequestBodyPtr requestBody() const { return nullptr; }
};

using ResponseWriterPtr = std::shared_ptr<ResponseWriter>;

}  // namespace libnet::http
