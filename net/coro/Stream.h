// Stream: a connection as a coroutine sees it. Reads, writes and the wait for
// the peer's close are awaitables that end with a value (Input, Errc), never
// an exception:
//
//   Task<> echo(Stream stream) {
//     while (Input in = co_await stream.read()) {
//       if (co_await stream.write(&*in) != Errc::kOk) break;
//     }
//   }  // the stream goes: the connection closes once its output is written
//
// Ownership: a Stream owns a reference to its TcpConnection, which keeps the
// state suspended operations register with. Move-only. When the last Stream of a connection is
// destroyed (its coroutine returned), the connection is closed once everything queued has been
// written (TcpConnection::closeAfterOutput()).
//
// One read, one write and one closed() may be pending at a time (one task
// reading while another writes is fine). When the connection closes (either
// side, an error, its server stopping), every pending operation resumes with
// Errc::kClosed; after the peer's half-close, reads end with Errc::kEof (once
// the unread input cannot satisfy them) and writes still work, until the
// Stream goes or shutdown()/close() is called.
//
// Back-pressure is the connection's output limit (TcpConnection::
// maxQueuedOutput(), where it also stops reading): a write hands its bytes
// over, then suspends while the queued output is above it (or
// StreamOptions::maxQueuedFiles files are queued), until it has drained to
// half. A peer that never reads holds its writer with at most the limit
// plus one write queued.
//
// Thread: the connection's loop only (a coroutine runs on the loop that
// spawned it). docs/coroutines.md: the model, timeouts and cancellation.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "net/coro/ClosedAwaiter.h"
#include "net/coro/ReadAwaiter.h"
#include "net/coro/StreamOptions.h"
#include "net/coro/WriteAwaiter.h"

namespace libnet {
class TcpConnection;  // net/TcpConnection.h; TcpConnectionPtr in net/Callbacks.h
}

namespace libnet::coro {

class Stream {
 public:
  Stream() = default;
  // Takes over `conn`'s input (its message callback), bounded by `options`.
  // Loop thread, before the connection delivers its first byte: in its
  // connection (up) callback or earlier. serve() and connect() do this for
  // you.
  explicit Stream(std::shared_ptr<TcpConnection> conn, const StreamOptions& options = {});
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  [[nodiscard]] explicit operator bool() const { return state_ != nullptr; }
  [[nodiscard]] const std::shared_ptr<TcpConnection>& connection() const { return conn_; }

  // Whatever has arrived: at least one byte. Ready at once while unread
  // input remains: a coroutine that leaves an incomplete message unread
  // (a parser's leftover) waits for the rest with readMore().
  [[nodiscard]] ReadAwaiter read() { return ReadAwaiter(state_, ReadAwaiter::Mode::kSome, 0, {}); }
  // At least one byte more than is unread now; Input::size() is all of it.
  // Bytes that arrived while the coroutine was suspended on something else
  // (a write under back-pressure) count as more: they are unread, but no
  // read has reported them yet.
  [[nodiscard]] ReadAwaiter readMore();
  // At least `count` bytes (Input::size() == count; more may be unread).
  [[nodiscard]] ReadAwaiter readAtLeast(size_t count) {
    return ReadAwaiter(state_, ReadAwaiter::Mode::kAtLeast, count, {});
  }
  // Up to and including the first `delimiter` (not empty; it must outlive
  // the await), found within the first `limit` bytes (default: the stream's
  // maxInput()), else Errc::kTooLong.
  [[nodiscard]] ReadAwaiter readUntil(std::string_view delimiter, size_t limit = 0);
  // The unread input, as left by earlier reads.
  [[nodiscard]] Buffer& input() const;

  // `data` must stay valid only until the await starts (it is written or
  // copied then).
  [[nodiscard]] WriteAwaiter write(std::string_view data) { return WriteAwaiter(state_, data); }
  // All readable bytes of `buffer` (emptied).
  [[nodiscard]] WriteAwaiter write(Buffer* buffer) { return WriteAwaiter(state_, buffer); }
  // TcpConnection::sendFile(): `length` bytes of `file` from `offset`, with
  // `head` (optional, emptied) before them. (UniqueFd: base/UniqueFd.h.)
  [[nodiscard]] WriteAwaiter sendFile(UniqueFd file, off_t offset, size_t length,
                                      Buffer* head = nullptr);

  // The peer's half-close (kEof) or the connection's close (kClosed).
  [[nodiscard]] ClosedAwaiter closed() { return ClosedAwaiter(state_); }

  // Half-closes our side once queued output is written (the connection
  // closes fully when the peer has closed too). Any thread.
  void shutdown();
  // Closes now, dropping queued output; pending operations end with kClosed.
  // Any thread.
  void close();

  // The options the stream was made with (StreamOptions).
  [[nodiscard]] size_t maxInput() const;
  [[nodiscard]] size_t maxQueuedFiles() const;

 private:
  void release();

  std::shared_ptr<TcpConnection> conn_;
  StreamState* state_ = nullptr;
};

}  // namespace libnet::coro
