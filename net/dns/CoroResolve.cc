#include "net/dns/CoroResolve.h"

#include <utility>

namespace libnet::dns {

ResolveAwaiter::~ResolveAwaiter() {
  if (!suspended()) return;
  query_.reset();  // destroyed while waiting: its loop went away
  forgetInTask();
}

bool ResolveAwaiter::suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  query_ = resolver_->lookup(host_, port_, family_, [this](ResolveResult result) {
    value_ = std::move(result);
    query_.reset();
    resumeWith(coro::Errc::kOk);
  });
  return true;
}

void ResolveAwaiter::cancel(coro::Errc why) {
  query_.reset();
  resumeWith(why);
}

ResolveResult ResolveAwaiter::await_resume() {
  if (result_ == coro::Errc::kOk) return std::move(value_);
  const ResolveErrc errc =
      result_ == coro::Errc::kTimedOut ? ResolveErrc::kTimedOut : ResolveErrc::kCancelled;
  ResolveResult result;
  result.error.errc = errc;
  result.error.message = host_ + ": " + resolveErrcName(errc);
  return result;
}

}  // namespace libnet::dns
