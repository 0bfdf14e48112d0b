// ConnectionInput: the input side of a TcpConnection, the one writer of its
// input buffer. The I/O strategy hands received bytes up (ConnectionIo::
// Owner::onInput) in storage it keeps (the loop's scratch buffer, a ring
// view, TLS plaintext); the message callback consumes what it can in place,
// and this object keeps what is left, or everything while the connection is
// not reading, in the connection's own buffer, in order. Reading resumed, the
// kept bytes go back to the callback a slice at a time.
//
// Owned by its TcpConnection (TcpConnection::Impl); loop thread only. The
// calls that may take or give back storage are handed the loop's BufferPool
// (every connection carries this object: no pointer of its own to it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/ConnectionIo.h"

namespace libnet {

class ConnectionInput {
 public:
  // The most input the message callback is handed at once from what was
  // kept while reading was off (bytes an io_uring receive delivered after
  // the pause was decided, or while the application had stopped reading),
  // on top of what it left unread; between slices the connection may pause
  // again, and the rest then waits. Delivered whole, such a block made an
  // echo queue all of it at once, past the output limit by as much. The size
  // of a read into the loop's scratch buffer.
  static constexpr size_t kSlice = 64 * 1024;

  ConnectionInput() = default;
  ConnectionInput(const ConnectionInput&) = delete;
  ConnectionInput& operator=(const ConnectionInput&) = delete;

  // The connection's own buffer: bytes kept from earlier deliveries.
  [[nodiscard]] Buffer* kept() { return &kept_; }
  [[nodiscard]] size_t capacity() const { return kept_.capacity(); }
  // Whether bytes arriving now must go behind kept ones.
  [[nodiscard]] bool holdsBytes() const { return kept_.readableBytes() > 0; }

  // Appends `received`'s bytes behind the kept ones (unless `open` is
  // false: the connection is closed and they are dropped), and empties it
  // (a view handed back).
  void keep(BufferPool& pool, Buffer* received, bool open) {
    if (open) {
      pool.lend(&kept_);
      kept_.append(received->view());
    }
    received->retrieveAll();
    received->releaseBorrowed();
  }

  // Around the message callback: `buffer` of `kind` is being delivered;
  // then settle() keeps what it left (`keepLeftover`: the callback returned
  // and the connection is open) and empties shared storage. The one place
  // that decides.
  void startDelivery(Buffer* buffer, InputKind kind) {
    delivering_ = buffer;
    deliveringKind_ = kind;
  }
  void settle(BufferPool& pool, Buffer* buffer, InputKind kind, bool keepLeftover);

  // The kind of a Buffer passed to send(): the input being delivered, the
  // kept bytes, or the application's own.
  [[nodiscard]] InputKind kindOf(const Buffer* buffer) const {
    if (buffer == delivering_) return deliveringKind_;
    if (buffer == &kept_) return InputKind::kConnectionInput;
    return InputKind::kApplication;
  }

  // Hands the kept bytes to `deliverKept` (which delivers kept() and
  // settles it), kSlice bytes at a time while `reading()`; what is left
  // when it stops stays kept if `open()`, in order, for the next resume.
  template <class Reading, class Open, class Deliver>
  void resume(BufferPool& pool, Reading&& reading, Open&& open, Deliver&& deliverKept);

  // The connection closed after a callback threw: unread input is dropped.
  void drop(BufferPool& pool) {
    kept_.retrieveAll();
    pool.reclaim(&kept_);
  }

 private:
  // Empty until used: most connections read through shared storage, and an
  // idle one costs no buffer memory.
  Buffer kept_{0};
  // The buffer the message callback is looking at, while it runs.
  Buffer* delivering_ = nullptr;
  InputKind deliveringKind_ = InputKind::kConnectionInput;
};

template <class Reading, class Open, class Deliver>
void ConnectionInput::resume(BufferPool& pool, Reading&& reading, Open&& open,
                             Deliver&& deliverKept) {
  if (kept_.readableBytes() <= kSlice) {
    if (kept_.readableBytes() > 0) deliverKept();
    return;
  }
  // The kept bytes move out, and come back a slice at a time behind what the
  // callback leaves of the one before. One copy, on this path only.
  Buffer held(0);
  held.swap(kept_);
  while (held.readableBytes() > 0 && reading()) {
    const size_t n = std::min(held.readableBytes(), kSlice);
    pool.lend(&kept_);
    kept_.append(std::string_view(held.peek(), n));
    held.retrieve(n);
    deliverKept();
  }
  if (held.readableBytes() > 0 && open()) {
    // Paused again: the rest waits, in order, for the next resume.
    pool.lend(&kept_);
    kept_.append(held.view());
  }
  held.retrieveAll();
  pool.reclaim(&held);
}

}  // namespace libnet
