// WriteAwaiter: a write to a Stream (Stream::write(), sendFile()), awaited at
// once. The bytes are handed to the connection as the await starts (written
// straight to the socket when it has room, else queued, exactly as
// TcpConnection::send()); the coroutine goes on at once unless
// back-pressure (Stream.h) suspends it until the queued output is back
// within the limits (half the connection's limit).
//
// Result: kOk; kClosed if the connection was closed before or while
// waiting (bytes not yet written are dropped); kTimedOut / kCancelled if a
// scope around it was cancelled while waiting (the bytes stay queued).
// Movable until awaited; loop thread only.
#pragma once

#include <sys/types.h>

#include <coroutine>
#include <cstddef>
#include <string_view>
#include <utility>

#include "net/coro/Errc.h"
#include "net/coro/Operation.h"

namespace libnet {
class Buffer;
class UniqueFd;
}  // namespace libnet

namespace libnet::coro {

class StreamState;

class WriteAwaiter : public detail::Operation {
 public:
  WriteAwaiter(StreamState* state, std::string_view data) : state_(state), data_(data) {}
  // Takes all readable bytes of `buffer` (the stream's own input included:
  // echoing what was read costs no copy the connection would not make).
  WriteAwaiter(StreamState* state, Buffer* buffer) : state_(state), buffer_(buffer) {}
  // TcpConnection::sendFile(): the awaiter owns `file` from now on.
  WriteAwaiter(StreamState* state, UniqueFd file, off_t offset, size_t length, Buffer* head);
  WriteAwaiter(WriteAwaiter&& other) noexcept
      : state_(other.state_),
        data_(other.data_),
        buffer_(other.buffer_),
        file_(std::exchange(other.file_, -1)),
        offset_(other.offset_),
        length_(other.length_) {}
  WriteAwaiter& operator=(WriteAwaiter&&) = delete;
  ~WriteAwaiter();

  [[nodiscard]] bool await_ready() { return start(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] Errc await_resume() const noexcept { return result_; }

 private:
  friend class StreamState;
  void cancel(Errc why) override;
  // The output is back within the limits (kOk), or the connection closed.
  void complete(Errc result);
  // Hands the bytes over; true unless the output is over the limits and the
  // writer must wait.
  bool start();
  bool suspend(std::coroutine_handle<> awaiting, TaskContext* context);

  StreamState* state_;
  std::string_view data_;
  Buffer* buffer_ = nullptr;
  int file_ = -1;  // owned until handed to the connection (UniqueFd.h stays out)
  off_t offset_ = 0;
  size_t length_ = 0;
};

}  // namespace libnet::coro
