// BufferRing: a provided-buffer ring registered with one io_uring (buffer
// group `groupId`): `count` buffers of `size` bytes that the kernel picks from
// for IOSQE_BUFFER_SELECT receives. The owner copies a completed buffer out
// and gives it back with recycle() at once, so the ring stays full.
// Owned by a UringPoller; loop thread only.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace libnet {

class BufferRing {
 public:
  // Throws std::system_error if the memory cannot be mapped or the kernel
  // refuses the registration. `count` must be a power of two.
  BufferRing(io_uring* ring, uint16_t groupId, uint32_t count, uint32_t size);
  ~BufferRing();
  BufferRing(const BufferRing&) = delete;
  BufferRing& operator=(const BufferRing&) = delete;

  [[nodiscard]] uint16_t groupId() const { return groupId_; }
  [[nodiscard]] uint32_t count() const { return count_; }
  [[nodiscard]] uint32_t bufferSize() const { return size_; }

  // The bytes a completion put in buffer `bufferId`.
  [[nodiscard]] std::string_view data(uint16_t bufferId, size_t length) const {
    return {buffers_ + static_cast<size_t>(bufferId) * size_, length};
  }
  // Hands buffer `bufferId` back to the kernel.
  void recycle(uint16_t bufferId);

 private:
  io_uring* ring_;
  uint16_t groupId_;
  uint32_t count_;
  uint32_t size_;
  io_uring_buf_ring* bufRing_ = nullptr;
  size_t bufRingBytes_ = 0;
  char* buffers_ = nullptr;
  size_t buffersBytes_ = 0;
};

}  // namespace libnet
