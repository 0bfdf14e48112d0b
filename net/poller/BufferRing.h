// BufferRing: a provided-buffer ring registered with one io_uring (buffer
// group `groupId`) for IOSQE_BUFFER_SELECT receives: up to `capacity`
// buffers of `size` bytes, of which only `initial` are handed to the kernel
// at first; grow() hands over more (doubling) when a receive found the ring
// empty (-ENOBUFS).
//
// Why start small: the kernel takes buffers in ring order and the loop gives
// them back at the tail, so every buffer ever provided is cycled through.
// With 2048 buffers of 16 KiB that is 32 MiB the kernel copies into, out of
// cache by the time a buffer comes round again (the receive copy cost three
// times epoll's read into one hot scratch buffer, ~20% of the server's CPU at
// 16 KiB messages), and 32 MiB of resident memory per loop once traffic has
// gone round. A small ring stays in cache and touches few pages; a loop with
// many connections receiving at once grows it to what it needs.
//
// Buffers are given back with recycle(), or, when a Buffer viewed one in
// place (lend()), through the Buffer::Lender interface. Owned by a
// UringPoller; loop thread only.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/Buffer.h"

namespace libnet {

class BufferRing final : public Buffer::Lender {
 public:
  // Throws std::system_error if the memory cannot be mapped or the kernel
  // refuses the registration. `capacity` must be a power of two; `initial`
  // is clamped to it.
  BufferRing(io_uring* ring, uint16_t groupId, uint32_t capacity, uint32_t size,
             uint32_t initial);
  ~BufferRing();
  BufferRing(const BufferRing&) = delete;
  BufferRing& operator=(const BufferRing&) = delete;

  [[nodiscard]] uint16_t groupId() const { return groupId_; }
  [[nodiscard]] uint32_t capacity() const { return capacity_; }
  // Buffers handed to the kernel so far (in the ring or in use).
  [[nodiscard]] uint32_t provided() const { return provided_; }
  [[nodiscard]] uint32_t bufferSize() const { return size_; }

  // The bytes a completion put in buffer `bufferId`.
  [[nodiscard]] std::string_view data(uint16_t bufferId, size_t length) const {
    return {buffers_ + static_cast<size_t>(bufferId) * size_, length};
  }
  // Hands buffer `bufferId` back to the kernel.
  void recycle(uint16_t bufferId);
  // Provides more buffers (twice as many, up to capacity); false if all are
  // provided already.
  bool grow();

  // Lending a buffer to a Buffer that views it in place (UringConnectionIo:
  // received bytes handed to the message callback, or queued for sending,
  // without a copy). At most half the provided buffers may be out at once,
  // so that views held by sends to peers that do not read can never leave
  // the ring dry for every other connection.
  [[nodiscard]] bool canLend() const { return lent_ < provided_ / 2; }
  void lend(Buffer* buffer, uint16_t bufferId, size_t length) {
    ++lent_;
    buffer->borrow(data(bufferId, length), this, bufferId);
  }
  [[nodiscard]] uint32_t lent() const { return lent_; }
  // Buffer::Lender: a Buffer that viewed buffer `token` is done with it.
  void release(uint32_t token) override {
    --lent_;
    recycle(static_cast<uint16_t>(token));
  }

 private:
  void provide(uint32_t from, uint32_t to);

  io_uring* ring_;
  uint16_t groupId_;
  uint32_t capacity_;
  uint32_t size_;
  uint32_t provided_ = 0;
  uint32_t lent_ = 0;
  io_uring_buf_ring* bufRing_ = nullptr;
  size_t bufRingBytes_ = 0;
  char* buffers_ = nullptr;
  size_t buffersBytes_ = 0;
};

}  // namespace libnet
