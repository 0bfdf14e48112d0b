// Input: what a read of a Stream returns. On success (true) the unread input
// holds what the read asked for: size() bytes of it are the match (at least N
// bytes; up to and including the delimiter; or everything that arrived).
// The bytes stay in the stream until consumed (consume(), or buffer()'s
// retrieve*), so what a read leaves is there for the next one.
//
// An Input names the stream's unread input, not a copy: buffer() may be a
// view of the io_uring buffer ring or the loop's scratch buffer while the
// coroutine runs, and the connection's own buffer after it next suspends, and
// buffer() always returns the right one. Do not keep a Buffer& or a
// string_view from it across a co_await: the storage behind it may hold
// another connection's bytes by then. Loop thread only. (Buffer's members
// need net/Buffer.h.)
#pragma once

#include <cstddef>
#include <string_view>

#include "net/coro/Errc.h"

namespace libnet {
class Buffer;
}

namespace libnet::coro {

class StreamState;

class Input {
 public:
  Input(StreamState* state, Errc error, size_t size) : state_(state), error_(error), size_(size) {}

  [[nodiscard]] explicit operator bool() const { return error_ == Errc::kOk; }
  [[nodiscard]] Errc error() const { return error_; }
  // Bytes of the match (0 when the read failed).
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] std::string_view view() const;
  // Everything unread (the match and whatever arrived after it).
  [[nodiscard]] Buffer& buffer() const;
  Buffer* operator->() const { return &buffer(); }
  Buffer& operator*() const { return buffer(); }
  // Drops the match from the unread input.
  void consume() const;

 private:
  StreamState* state_;
  Errc error_;
  size_t size_;
};

}  // namespace libnet::coro
