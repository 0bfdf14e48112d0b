// BufferPool: spare buffer storage of one loop. A connection borrows a large
// buffer while it holds bytes (a message being received, a send in flight,
// output waiting for the socket) and gives it back as soon as the buffer is
// empty again, in exchange for a small one. So an idle connection keeps only
// small buffers, whatever the largest message it ever carried (when every
// connection kept its grown buffers for life, a storm of large messages left
// each one holding them: docs/benchmarks.md, "Memory per connection
// (echo_server, both backends)"), while a busy one costs no allocation per
// message: in the steady state buffers only change hands.
//
// Owned by its loop (LoopInternals::bufferPool()); loop thread only.
#pragma once

#include <cstddef>
#include <vector>

#include "net/Buffer.h"

namespace libnet {

class BufferPool {
 public:
  // Storage up to this stays with its buffer (a connection of small
  // messages keeps what it grew to, at most this); more is pooled.
  static constexpr size_t kSmallCapacity = Buffer::kCheapPrepend + Buffer::kInitialSize;
  // Spare buffers kept; more are freed. Enough for the messages one loop
  // turn moves, not for every connection.
  static constexpr size_t kMaxSpare = 64;
  // Larger storage is freed rather than kept (a rare huge reply).
  static constexpr size_t kMaxSpareCapacity = 1024 * 1024;
  // And at most this much in all: a burst of output queued for slow peers
  // returns dozens of 1 MiB buffers, which would otherwise stay resident
  // here, far beyond what one loop turn needs.
  static constexpr size_t kMaxSpareBytes = 8 * 1024 * 1024;

  // Heap memory a loop's connections gave back (their buffers freed) beyond
  // which the loop asks the allocator to return free pages to the system.
  static constexpr size_t kTrimAfterBytes = 8 * 1024 * 1024;

  BufferPool() = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // `buffer` is about to take bytes: if it is empty and small, it gets a
  // spare large buffer's storage (if there is one; else a larger small one
  // that recycle() kept, if any; else it grows as usual).
  void lend(Buffer* buffer);
  // `buffer` is empty again: storage beyond kSmallCapacity goes back to the
  // pool (or is freed), and `buffer` is left small. A buffer that still
  // holds bytes is left alone.
  void reclaim(Buffer* buffer);

  // `buffer`'s owner is going (a closed connection's output buffers, once
  // no send reads them): its storage, large or small, serves the next
  // connection's bytes instead of being freed with it (a short connection
  // would otherwise allocate its reply's storage anew each time). Bounded
  // like the rest; a buffer that still holds bytes is left alone.
  void recycle(Buffer* buffer);

  [[nodiscard]] size_t spareCount() const { return spare_.size(); }

  // Heap memory of `bytes` (buffer storage, a closed connection and its TLS
  // session) was, or is about to be, freed on this loop.
  void noteFreed(size_t bytes) { freedBytes_ += bytes; }
  // Whether trimHeap() has work: kTrimAfterBytes freed since the last one.
  [[nodiscard]] bool trimDue() const { return freedBytes_ >= kTrimAfterBytes; }
  // glibc keeps freed memory in its heap (a burst of 1 MiB output buffers
  // for peers that never read stayed resident after they were gone:
  // docs/benchmarks.md, "Peers that send and never read: memory per peer,
  // and after they leave"): hands the free pages back (malloc_trim). The
  // loop calls it at most about once a second, only when trimDue(). No-op
  // off glibc.
  void trimHeap();

 private:
  std::vector<Buffer> spare_;  // large, empty
  std::vector<Buffer> small_;  // small, empty: given out in exchange
  size_t freedBytes_ = 0;
  size_t spareBytes_ = 0;  // capacity of spare_
};

}  // namespace libnet
