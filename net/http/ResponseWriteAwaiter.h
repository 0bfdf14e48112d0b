// http::write(writer, data): a ResponseWriter's write, awaited in a
// coroutine (net/coro/). The bytes are handed to the writer as the await
// starts; the coroutine goes on at once unless the writer says false (past
// its highWater), and then waits for its writable callback.
//
//   HttpResponse head(false);
//   writer->start(std::move(head));
//   for (const std::string& row : rows) {
//     if (co_await http::write(writer, row) != coro::Errc::kOk) co_return;  // client gone
//   }
//   writer->finish();
//
// Result: kOk; kClosed once the client is gone (closed() before or after
// the write); kCancelled / kTimedOut when a scope around it (withStop,
// withTimeout) ends it while it waits. A coroutine run by coroHandler()
// (CoroHandler.h) is stopped when the client goes, which ends such a wait;
// elsewhere, put the wait under a withStop() that the writer's closed
// callback stops, as coroHandler() does: the writable callback never runs
// for a client that has gone. The awaiter takes the writer's writable
// callback while it waits. On the writer's loop thread (the coroutine's).
#pragma once

#include <coroutine>
#include <memory>
#include <string>
#include <utility>

#include "net/coro/Errc.h"
#include "net/coro/Operation.h"
#include "net/http/ResponseWriter.h"

namespace libnet::http {

class ResponseWriteAwaiter : public coro::detail::Operation {
 public:
  ResponseWriteAwaiter(ResponseWriterPtr writer, std::string data)
      : writer_(std::move(writer)), data_(std::move(data)) {}
  ResponseWriteAwaiter(ResponseWriteAwaiter&& other) noexcept
      : writer_(std::move(other.writer_)), data_(std::move(other.data_)) {}
  ResponseWriteAwaiter& operator=(ResponseWriteAwaiter&&) = delete;
  ~ResponseWriteAwaiter();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] coro::Errc await_resume() const noexcept { return result_; }

 private:
  // What the writable callback finds: this awaiter while it waits, null
  // once it has resumed or gone (the callback may outlive it).
  struct Slot {
    ResponseWriteAwaiter* awaiter = nullptr;
  };

  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);
  void cancel(coro::Errc why) override;
  void resume(coro::Errc why);

  ResponseWriterPtr writer_;
  std::string data_;
  std::shared_ptr<Slot> slot_;
};

[[nodiscard]] inline ResponseWriteAwaiter write(ResponseWriterPtr writer, std::string data) {
  return ResponseWriteAwaiter(std::move(writer), std::move(data));
}

}  // namespace libnet::http
