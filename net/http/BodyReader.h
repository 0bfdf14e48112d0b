// http::BodyReader: a response body read piece by piece from a coroutine,
// for bodies too large to hold (//net/http:client_coro).
//
//   http::BodyReader reader(client, {.url = "http://host/big.iso"});
//   while (true) {
//     http::BodyChunk chunk = co_await reader.next();
//     if (!chunk.error.empty() || chunk.end) break;
//     write(chunk.data);
//   }
//   if (reader.result()->ok()) ... reader.result()->response().status
//
// The request starts when the reader is made. Pieces arrive as the client
// reads them and wait in the reader until next() takes them (copied out of
// the connection's buffer once). Past kHighWater bytes waiting, the
// connection stops reading (TCP flow control then holds the server back);
// it reads again once next() has brought them under kLowWater, so a slow
// reader holds about kHighWater plus one read, whatever the body's size. The last next() returns
// end = true, or the error that ended the response (a truncated body is an error, never an end).
// result() is set then: the status and headers (its body is empty: it came in pieces). A
// withTimeout()/withStop() scope around next() ends that next() at once with the error and cancels
// the request (the connection is closed); destroying the reader cancels it too.
//
// Loop thread of the client, which must be the task's loop and outlive the
// reader.
#pragma once

#include <coroutine>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "net/coro/Errc.h"
#include "net/coro/Operation.h"
#include "net/http/HttpClient.h"

namespace libnet::coro {
class TaskContext;
}

namespace libnet::http {

struct BodyChunk {
  std::string data;
  bool end = false;   // the body is complete (data is empty)
  std::string error;  // non-empty: the response failed (see result())
};

class BodyReader {
  struct State;

 public:
  static constexpr size_t kHighWater = 1024 * 1024;
  static constexpr size_t kLowWater = 256 * 1024;

  BodyReader(HttpClient& client, Request request);
  ~BodyReader();
  BodyReader(const BodyReader&) = delete;
  BodyReader& operator=(const BodyReader&) = delete;

  class NextAwaiter : public coro::detail::Operation {
   public:
    explicit NextAwaiter(BodyReader* reader) : reader_(reader) {}
    NextAwaiter(NextAwaiter&&) noexcept = default;  // before awaiting
    NextAwaiter& operator=(NextAwaiter&&) = delete;
    ~NextAwaiter();
    [[nodiscard]] bool await_ready() const noexcept;
    template <class P>
    bool await_suspend(std::coroutine_handle<P> awaiting) {
      return suspend(awaiting, awaiting.promise().context());
    }
    BodyChunk await_resume();

   private:
    friend class BodyReader;
    void cancel(coro::Errc why) override;
    bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);
    void wake() { resumeWith(coro::Errc::kOk); }
    BodyReader* reader_;
  };

  [[nodiscard]] NextAwaiter next() { return NextAwaiter(this); }
  // Set once the response ended (successfully or not).
  [[nodiscard]] const std::optional<FetchResult>& result() const;
  // Body bytes received and not yet taken by next().
  [[nodiscard]] size_t queuedBytes() const;

 private:
  HttpClient* client_;
  std::string url_;
  RequestHandle handle_;
  std::shared_ptr<State> state_;
};

}  // namespace libnet::http
