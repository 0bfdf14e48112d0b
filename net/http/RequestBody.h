// http::RequestBody: a request body handed to the handler in pieces as it
// arrives, for bodies too large (or too slow) to hold whole: an upload passed
// on to an application server, a file written as it comes.
//
// A router (HttpServer::setRouter) asks for it per request, when the
// request's head is complete: the AsyncHandler then runs at once, with the
// head and an empty body(), and finds the body through
// ResponseWriter::requestBody(). Requests without a body get an empty one
// that ends kComplete at once.
//
//   writer->requestBody()->setEndCallback([](RequestBody::End end) { ... });
//   writer->requestBody()->setDataCallback([](std::string_view piece) { ... });
//
// Pieces run the data callback on the connection's loop, in order, each
// with bytes of the payload only (de-chunked). Delivery starts when the data
// callback is set; until then, and while pause()d, the body waits: HTTP/1.1
// stops reading the connection, HTTP/2 stops granting the stream's flow
// control window, so the client is held back by TCP or HTTP/2 flow control
// and the server holds at most about one read (HTTP/1.1) or one window
// (HTTP/2) of it. resume() delivers what waits and reads on.
//
// The end callback runs once, on the loop, after the last piece: kComplete
// when the whole body arrived; kAborted when it cannot (the client left or
// reset the stream, a malformed chunk, more than the server's
// maxStreamedBodyBytes, the server's drain deadline). An answer finished
// before its body was read through ends the body kAborted too; HTTP/1.1 then
// closes the connection after the answer (the rest of the body is not
// read), HTTP/2 resets the stream's sending side (RST_STREAM NO_ERROR).
// Once it has ended, the body lets go of both callbacks.
//
// Loop thread only (ResponseWriter::loop()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

namespace libnet::http {

class RequestBody {
 public:
  enum class End { kComplete, kAborted };
  using DataCallback = std::function<void(std::string_view piece)>;
  using EndCallback = std::function<void(End end)>;

  virtual ~RequestBody() = default;

  virtual void setDataCallback(DataCallback callback) = 0;
  virtual void setEndCallback(EndCallback callback) = 0;
  // Stops delivery (and reading) until resume(); both idempotent.
  virtual void pause() = 0;
  virtual void resume() = 0;

  // The length the client announced (Content-Length), or -1 when it did
  // not (chunked; HTTP/2 without content-length).
  [[nodiscard]] virtual int64_t contentLength() const = 0;
  // Payload bytes delivered to the data callback so far.
  [[nodiscard]] virtual uint64_t received() const = 0;
  [[nodiscard]] virtual bool ended() const = 0;
};

using RequestBodyPtr = std::shared_ptr<RequestBody>;

}  // namespace libnet::http
