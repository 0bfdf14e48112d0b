#include "net/http/CoroFetch.h"

#include <utility>

namespace libnet::http {

ClientError cancelledError(coro::Errc why, const std::string& url) {
  if (why == coro::Errc::kTimedOut) {
    return {ClientError::Kind::kRequestTimeout, url + ": timed out (withTimeout)"};
  }
  return {ClientError::Kind::kCancelled, url + ": cancelled"};
}

FetchAwaiter::~FetchAwaiter() {
  if (!suspended()) return;
  client_->cancel(handle_);  // destroyed while waiting: no callback after this
  forgetInTask();
}

bool FetchAwaiter::suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  handle_ = client_->request(request_, [this](FetchResult result) {
    value_.emplace(std::move(result));
    resumeWith(coro::Errc::kOk);
  });
  return true;
}

void FetchAwaiter::cancel(coro::Errc why) {
  client_->cancel(handle_);
  resumeWith(why);
}

FetchResult FetchAwaiter::await_resume() {
  if (result_ == coro::Errc::kOk && value_) return std::move(*value_);
  return FetchResult(cancelledError(result_, request_.url));
}

}  // namespace libnet::http
