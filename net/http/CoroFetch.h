// http::fetch(): an HttpClient request as a coroutine awaitable
// (//net/http:client_coro; not in net/coro/Coro.h, so that a coroutine
// program without HTTP does not include the client).
//
//   http::FetchResult r = co_await http::fetch(client, {.url = "http://host/"});
//   auto r = co_await coro::withTimeout(2s, http::fetch(client, request));
//
// Resumes with the response or the ClientError that replaces it. A
// withTimeout()/withStop() scope around it (or a stop token given to
// spawn()) ends it at once with ClientError::kRequestTimeout / kCancelled,
// and cancels the request: a connection that carried it is closed, never
// pooled, whether or not part of the response had arrived. Destroying the
// task while it waits cancels the request too.
//
// Loop thread of the client, which must be the task's loop and outlive the
// await. No frame is allocated: the awaiter lives in the awaiting frame.
#pragma once

#include <coroutine>
#include <optional>

#include "net/coro/Errc.h"
#include "net/coro/Operation.h"
#include "net/http/HttpClient.h"

namespace libnet::coro {
class TaskContext;
}

namespace libnet::http {

class FetchAwaiter : public coro::detail::Operation {
 public:
  FetchAwaiter(HttpClient& client, Request request)
      : client_(&client), request_(std::move(request)) {}
  FetchAwaiter(FetchAwaiter&&) noexcept = default;  // before awaiting
  FetchAwaiter& operator=(FetchAwaiter&&) = delete;
  ~FetchAwaiter();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  FetchResult await_resume();

 private:
  void cancel(coro::Errc why) override;
  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);

  HttpClient* client_;
  Request request_;
  RequestHandle handle_;
  std::optional<FetchResult> value_;
};

[[nodiscard]] inline FetchAwaiter fetch(HttpClient& client, Request request) {
  return FetchAwaiter(client, std::move(request));
}

// The ClientError a cancelled await reports.
[[nodiscard]] ClientError cancelledError(coro::Errc why, const std::string& url);

}  // namespace libnet::http
