// ClosedAwaiter: Stream::closed(), awaited at once: resumes when the peer
// half-closes (kEof) or the connection closes (kClosed). Input that arrives
// while it waits (and input left unread) is dropped: a coroutine waiting for
// the end has no use for it, and memory stays bounded. Movable until awaited;
// loop thread only.
#pragma once

#include <coroutine>

#include "net/coro/Errc.h"
#include "net/coro/Operation.h"

namespace libnet::coro {

class StreamState;

class ClosedAwaiter : public detail::Operation {
 public:
  explicit ClosedAwaiter(StreamState* state) : state_(state) {}
  ClosedAwaiter(ClosedAwaiter&&) noexcept = default;  // before awaiting
  ClosedAwaiter& operator=(ClosedAwaiter&&) = delete;
  ~ClosedAwaiter();

  [[nodiscard]] bool await_ready();
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] Errc await_resume() const noexcept { return result_; }

 private:
  friend class StreamState;
  void cancel(Errc why) override;
  void complete(Errc result);
  bool suspend(std::coroutine_handle<> awaiting, TaskContext* context);

  StreamState* state_;
};

}  // namespace libnet::coro
