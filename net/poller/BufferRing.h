// BufferRing: a provided-buffer ring registered with one io_uring (buffer
// group `groupId`) for IOSQE_BUFFER_SELECT receives: up to `capacity`
// buffers of `size` bytes, of which only `initial` are handed to the kernel
// at first; grow() hands over more (doubling) when a receive found the ring
// empty (-ENOBUFS).
//
// Why start small: the kernel takes buffers in ring order and the loop gives
// them back at the tail, so every buffer ever provided is cycled through.
// With 2048 buffers of 16 KiB that is 32 MiB the kernel copies into, out of
// cache by the time a buffer comes round again (the receive copy into cold
// memory cost several times epoll's read into one hot scratch buffer, a
// large share of the server's CPU at 16 KiB messages: docs/benchmarks.md,
// "io_uring without the receive copy (2026-11-24)" and "Figures formerly
// quoted in code comments"), and 32 MiB of resident memory per loop once
// traffic has gone round. A small ring stays in cache and touches few
// pages; a loop with many connections receiving at once grows it to what it
// needs.
//
// Incremental consumption: where the kernel has it (IOU_PBUF_RING_INC,
// Linux 6.12), a receive takes only the bytes it needs from a buffer and the
// next receive continues in the same buffer, so 64-byte messages pack into
// one buffer instead of taking one 16 KiB buffer each (and a page of it
// resident). A buffer is then shared by several completions: it goes back
// to the kernel once the kernel has moved past it (a completion without
// IORING_CQE_F_BUF_MORE) and every part handed out is done with.
//
// Shrinking: a burst (many connections receiving at once, say) grows the
// ring, and every buffer the kernel wrote into stays resident. Once demand
// has fallen (shrinkIfQuiet(), called by the poller about once a second),
// the buffers beyond what is needed leave circulation: those sitting unused
// in the kernel's ring have their pages handed back at once (MADV_DONTNEED;
// the kernel faults a page in again if it still fills one before it comes
// back), the others when they come back; grow() brings them in again. The
// pages are only given back where nothing can be writing into them
// meanwhile: not with SQPOLL, whose kernel thread receives concurrently, and
// only with DEFER_TASKRUN, where the kernel copies received bytes only inside
// the loop's own io_uring_enter (without it, that work runs on the way back
// from any system call, madvise's included). A buffer the kernel filled is
// never trimmed before its completion is handled: the poller shrinks only
// with no completion taken out of the CQ left unhandled, and trim() keeps
// every buffer a completion still waiting in the CQ names.
//
// Each completion that carries a buffer goes through received(); what it
// returns is given back with finished() when copied out, or lent to a
// Buffer that views it in place (lend()), which hands it back through the
// Buffer::Lender interface. Owned by a UringContext (the probe makes a small
// one of its own); loop thread only.
#pragma once

#include <liburing.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "net/Buffer.h"

namespace libnet {

class BufferRing final : public Buffer::Lender {
 public:
  // Throws std::system_error if the memory cannot be mapped or the kernel
  // refuses the registration. `capacity` must be a power of two; `initial`
  // is clamped to it.
  // `incremental`: ask for incremental consumption (used if the kernel has it).
  BufferRing(io_uring* ring, uint16_t groupId, uint32_t capacity, uint32_t size, uint32_t initial,
             bool incremental = true);
  ~BufferRing();
  BufferRing(const BufferRing&) = delete;
  BufferRing& operator=(const BufferRing&) = delete;

  [[nodiscard]] uint16_t groupId() const { return groupId_; }
  [[nodiscard]] uint32_t capacity() const { return capacity_; }
  // Buffers handed to the kernel so far (in the ring or in use).
  [[nodiscard]] uint32_t provided() const { return provided_; }
  [[nodiscard]] uint32_t initial() const { return initial_; }
  [[nodiscard]] uint32_t bufferSize() const { return size_; }
  [[nodiscard]] bool incremental() const { return incremental_; }

  // Buffer `bufferId`'s memory from `offset`.
  [[nodiscard]] std::string_view data(uint16_t bufferId, size_t length, size_t offset = 0) const {
    return {buffers_ + static_cast<size_t>(bufferId) * size_ + offset, length};
  }

  struct Received {
    uint16_t id;
    std::string_view bytes;
  };
  // The bytes of a completion with IORING_CQE_F_BUFFER (`res` may be <= 0:
  // then no bytes). Exactly one finished() or lend() must follow.
  Received received(uint32_t cqeFlags, int32_t res);
  // The bytes received() returned are no longer needed.
  void finished(uint16_t bufferId) { maybeRecycle(bufferId); }
  // Provides more buffers (twice as many, up to capacity); false if all are
  // provided already.
  bool grow();
  // `buffers` completions of this loop turn carried a buffer: the demand
  // that shrinkIfQuiet() weighs.
  void noteDemand(uint32_t buffers) { peakDemand_ = std::max(peakDemand_, buffers + lent_); }
  // If the ring did not grow and its peak demand stayed under a quarter of
  // it since the last call, takes all but the smallest initial·2^k buffers
  // that is at least twice that peak out of circulation. `trimPages`: hand their pages back too;
  // only where the kernel cannot be filling buffers meanwhile (the ring is
  // DEFER_TASKRUN, not SQPOLL: it receives only inside io_uring_enter), and
  // with every completion taken out of the CQ handled already: a buffer
  // whose completion waits unhandled would lose its bytes. Completions
  // still in the CQ are looked at and their buffers kept.
  void shrinkIfQuiet(bool trimPages);

  // Lending a buffer to a Buffer that views it in place (UringConnectionIo:
  // received bytes handed to the message callback, or queued for sending,
  // without a copy). At most half the provided buffers may be out at once,
  // so that views held by sends to peers that do not read can never leave
  // the ring dry for every other connection.
  [[nodiscard]] bool canLend() const { return lent_ < provided_ / 2; }
  void lend(Buffer* buffer, const Received& r) {
    ++lent_;
    ++refs_[r.id];
    buffer->borrow(r.bytes, this, r.id);
  }
  [[nodiscard]] uint32_t lent() const { return lent_; }
  // Buffer::Lender: a Buffer that viewed part of buffer `token` is done.
  void release(uint32_t token) override {
    --lent_;
    --refs_[token];
    maybeRecycle(static_cast<uint16_t>(token));
  }

 private:
  // Puts buffers [from, to) that are not in circulation into the ring.
  void provide(uint32_t from, uint32_t to);
  // Hands back the pages of buffers [from, to) that sit unused in the ring.
  void trim(uint32_t from, uint32_t to);
  // Back to the kernel if the kernel is past it and no view holds it.
  void maybeRecycle(uint16_t bufferId);
  void recycle(uint16_t bufferId);

  io_uring* ring_;
  uint16_t groupId_;
  uint32_t capacity_;
  uint32_t size_;
  uint32_t provided_ = 0;  // buffers [0, provided_) are in circulation
  uint32_t initial_ = 0;
  uint32_t lent_ = 0;
  uint32_t peakDemand_ = 0;
  bool grew_ = false;       // since the last shrinkIfQuiet()
  bool trimPages_ = false;  // as the last shrinkIfQuiet() was told
  bool incremental_ = false;
  // Per buffer: bytes the kernel has filled (incremental mode), views
  // holding it, and whether the kernel has moved past it.
  std::vector<uint32_t> used_;
  std::vector<uint16_t> refs_;
  std::vector<bool> kernelDone_;  // also: out of the ring until recycled
  // Whether the buffer is in the kernel's ring; a buffer neither there nor
  // kernelDone_ is out of circulation.
  std::vector<bool> inRing_;
  // trim(): buffers named by completions still waiting in the CQ.
  std::vector<uint16_t> pending_;
  io_uring_buf_ring* bufRing_ = nullptr;
  size_t bufRingBytes_ = 0;
  char* buffers_ = nullptr;
  size_t buffersBytes_ = 0;
};

}  // namespace libnet
