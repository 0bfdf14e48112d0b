// http::RequestBodyReader: a request body taken in pieces (RequestBody.h,
// HttpServer::Route::kStreamedBody) read in a coroutine (net/coro/), one
// piece per co_await:
//
//   RequestBodyReader reader(writer->requestBody());
//   for (;;) {
//     BodyPiece piece = co_await http::read(reader);
//     if (piece.status == coro::Errc::kEof) break;       // the whole body came
//     if (piece.status != coro::Errc::kOk) co_return;     // kClosed: it broke off
//     co_await store(piece.data);
//   }
//
// Back-pressure by construction: a piece that arrives while nobody waits in
// read() is kept (one, copied out of the connection's input) and the body
// is paused until the next read() takes it, so the client is held back
// whenever the coroutine is busy elsewhere.
//
// Results: kOk with a piece; kEof once the body is complete (data empty);
// kClosed once it ended kAborted (the client left, the body broke off, the
// answer ended first); kCancelled / kTimedOut when a scope around the read
// (withStop, withTimeout; coroHandler's stop when the client goes) ends it.
//
// The reader takes the body's data and end callbacks (constructing it
// starts the delivery, and "100 Continue"). Loop thread only (the
// coroutine's, the writer's loop).
#pragma once

#include <coroutine>
#include <memory>
#include <optional>
#include <string>

#include "net/coro/Errc.h"
#include "net/coro/Operation.h"
#include "net/http/RequestBody.h"

namespace libnet::http {

struct BodyPiece {
  coro::Errc status = coro::Errc::kOk;
  std::string data;
};

class RequestBodyReader {
 public:
  class ReadAwaiter;

  explicit RequestBodyReader(RequestBodyPtr body);
  ~RequestBodyReader();
  RequestBodyReader(const RequestBodyReader&) = delete;
  RequestBodyReader& operator=(const RequestBodyReader&) = delete;

  [[nodiscard]] ReadAwaiter read();
  [[nodiscard]] const RequestBodyPtr& body() const;

 private:
  // Shared with the body's callbacks (weakly: the body may outlive this).
  struct State {
    RequestBodyPtr body;
    std::string held;  // a piece that came with nobody reading
    bool hasHeld = false;
    std::optional<RequestBody::End> end;
    ReadAwaiter* waiting = nullptr;
  };

  std::shared_ptr<State> state_;
};

class RequestBodyReader::ReadAwaiter : public coro::detail::Operation {
 public:
  explicit ReadAwaiter(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ReadAwaiter(ReadAwaiter&& other) noexcept : state_(std::move(other.state_)) {}
  ReadAwaiter& operator=(ReadAwaiter&&) = delete;
  ~ReadAwaiter();

  [[nodiscard]] bool await_ready();
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] BodyPiece await_resume() {
    piece_.status = result_;
    return std::move(piece_);
  }

  // The body's side (RequestBodyReader.cc).
  void deliver(std::string_view data);
  void ended(RequestBody::End end);

 private:
  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);
  void cancel(coro::Errc why) override;
  // What an ended body reads as.
  static coro::Errc endResult(RequestBody::End end);

  std::shared_ptr<State> state_;
  BodyPiece piece_;
};

[[nodiscard]] inline RequestBodyReader::ReadAwaiter read(RequestBodyReader& reader) {
  return reader.read();
}

}  // namespace libnet::http
