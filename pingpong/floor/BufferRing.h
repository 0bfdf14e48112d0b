// A provided-buffer ring registered with an io_uring (buffer group `groupId`)
// for multishot recv with IOSQE_BUFFER_SELECT. liburing 2.3 has no
// io_uring_setup_buf_ring, so the ring is mmap'ed here and registered with
// io_uring_register_buf_ring. Owns the ring and the buffer memory; borrows the
// io_uring, which must outlive it. Single-threaded, like the ring it serves.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>

namespace pingpong {

class BufferRing {
 public:
  // `count` (the most buffers) must be a power of two; only `initial` are
  // provided at first, and grow() doubles them (a small ring stays in cache,
  // see net/poller/BufferRing.h). Throws std::system_error on mmap or
  // registration failure.
  BufferRing(io_uring* ring, unsigned count, size_t bufferSize, uint16_t groupId, unsigned initial);
  BufferRing(const BufferRing&) = delete;
  BufferRing& operator=(const BufferRing&) = delete;
  ~BufferRing();

  [[nodiscard]] uint16_t groupId() const { return groupId_; }
  [[nodiscard]] const char* data(unsigned bufferId) const {
    return buffers_ + static_cast<size_t>(bufferId) * bufferSize_;
  }

  // Hands a buffer back to the kernel. Takes effect at the next publish(),
  // so a whole batch of completions costs one store to the ring tail.
  void recycle(unsigned bufferId);
  void publish();
  // Provides twice as many buffers (up to `count`), after a recv found none.
  void grow();

  // A buffer kept out of the ring while a send goes out from it: allowed
  // while fewer than half of the provided buffers are kept so.
  [[nodiscard]] bool canKeep() const { return kept_ < provided_ / 2; }
  void keep() { ++kept_; }
  void giveBack(unsigned bufferId) {
    --kept_;
    recycle(bufferId);
  }

 private:
  io_uring* ring_;
  io_uring_buf_ring* bufRing_ = nullptr;
  char* buffers_ = nullptr;
  size_t ringBytes_;
  size_t bufferSize_;
  unsigned count_;
  uint16_t groupId_;
  int unpublished_ = 0;
  unsigned provided_ = 0;
  unsigned kept_ = 0;
};

}  // namespace pingpong
