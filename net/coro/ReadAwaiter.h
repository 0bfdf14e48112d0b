// ReadAwaiter: a read of a Stream (Stream::read(), readMore(), readAtLeast(),
// readUntil()), awaited at once. Ready without suspending when the unread
// input already satisfies it; otherwise suspended until the bytes that do
// arrive (resumed inline by the connection's delivery, on those bytes), the
// peer half-closes (kEof), the connection closes (kClosed) or a scope around
// it is cancelled. Movable until awaited; loop thread only.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/coro/Input.h"
#include "net/coro/Operation.h"

namespace libnet::coro {

class ReadAwaiter : public detail::Operation {
 public:
  enum class Mode : uint8_t { kSome, kMore, kAtLeast, kUntil };

  ReadAwaiter(StreamState* state, Mode mode, size_t count, std::string_view delimiter)
      : state_(state), mode_(mode), count_(count), delimiter_(delimiter) {}
  ReadAwaiter(ReadAwaiter&&) noexcept = default;  // before awaiting
  ReadAwaiter& operator=(ReadAwaiter&&) = delete;
  ~ReadAwaiter();

  [[nodiscard]] bool await_ready() { return settled(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  Input await_resume() const { return Input(state_, result_, length_); }

 private:
  friend class StreamState;
  void cancel(Errc why) override;
  // Whether `input` satisfies the read (or proves it cannot be: too long),
  // setting the result.
  [[nodiscard]] bool satisfiedBy(const Buffer& input);
  // Resumes with the result (set by satisfiedBy() or `why`).
  void complete();
  void complete(Errc why) {
    result_ = why;
    complete();
  }
  // Whether the read is over already: satisfied, or the stream has ended.
  bool settled();
  bool suspend(std::coroutine_handle<> awaiting, TaskContext* context);

  StreamState* state_;
  Mode mode_;
  size_t count_;  // kMore, kAtLeast: bytes; kUntil: the most bytes to look through
  std::string_view delimiter_;
  size_t scanned_ = 0;  // kUntil: no delimiter starts before this offset
  size_t length_ = 0;
};

}  // namespace libnet::coro
