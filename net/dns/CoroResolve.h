// dns::resolve(): a lookup as a coroutine awaitable.
//
//   ResolveResult r = co_await dns::resolve(resolver, "example.com", 443);
//   ResolveResult r = co_await withTimeout(2s, dns::resolve(resolver, host, port));
//
// Resumes with the lookup's result (addresses, or why there are none). A
// withTimeout()/withStop() scope around it, or a stop token given to
// spawn(), ends it at once with ResolveErrc::kTimedOut / kCancelled, and
// the query is cancelled (NameResolver::Query). Destroying the task while it
// waits (its loop went away) cancels the query too; nothing leaks.
//
// Loop thread of the resolver, which must be the task's loop. The resolver
// must outlive the await: one destroyed under it never calls back, and the
// task then waits until a scope around it ends or its loop goes. No frame
// is allocated: the awaiter lives in the awaiting coroutine's frame.
#pragma once

#include <coroutine>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/NameResolver.h"
#include "net/coro/Errc.h"
#include "net/coro/Operation.h"

namespace libnet::coro {
class TaskContext;
}

namespace libnet::dns {

class ResolveAwaiter : public coro::detail::Operation {
 public:
  ResolveAwaiter(NameResolver& resolver, std::string_view host, uint16_t port,
                 NameResolver::Family family)
      : resolver_(&resolver), host_(host), port_(port), family_(family) {}
  ResolveAwaiter(ResolveAwaiter&&) noexcept = default;  // before awaiting
  ResolveAwaiter& operator=(ResolveAwaiter&&) = delete;
  ~ResolveAwaiter();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  ResolveResult await_resume();

 private:
  void cancel(coro::Errc why) override;
  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);

  NameResolver* resolver_;
  std::string host_;
  uint16_t port_;
  NameResolver::Family family_;
  NameResolver::QueryPtr query_;
  ResolveResult value_;
};

[[nodiscard]] inline ResolveAwaiter resolve(
    NameResolver& resolver, std::string_view host, uint16_t port,
    NameResolver::Family family = NameResolver::Family::kAny) {
  return ResolveAwaiter(resolver, host, port, family);
}

}  // namespace libnet::dns
