#include "pingpong/floor/BufferRing.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <system_error>

namespace pingpong {

BufferRing::BufferRing(io_uring* ring, unsigned count, size_t bufferSize, uint16_t groupId,
                       unsigned initial)
    : ring_(ring),
      ringBytes_(count * sizeof(io_uring_buf)),
      bufferSize_(bufferSize),
      count_(count),
      groupId_(groupId) {
  assert(count > 0 && (count & (count - 1)) == 0);
  // The ring must be page aligned; mmap gives that.
  void* mem =
      ::mmap(nullptr, ringBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap");
  bufRing_ = static_cast<io_uring_buf_ring*>(mem);
  mem = ::mmap(nullptr, count_ * bufferSize_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
  if (mem == MAP_FAILED) {
    const int err = errno;
    ::munmap(bufRing_, ringBytes_);
    throw std::system_error(err, std::generic_category(), "mmap");
  }
  buffers_ = static_cast<char*>(mem);

  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(bufRing_);
  reg.ring_entries = count_;
  reg.bgid = groupId_;
  if (const int ret = io_uring_register_buf_ring(ring_, &reg, 0); ret < 0) {
    ::munmap(buffers_, count_ * bufferSize_);
    ::munmap(bufRing_, ringBytes_);
    throw std::system_error(-ret, std::generic_category(), "io_uring_register_buf_ring");
  }
  io_uring_buf_ring_init(bufRing_);
  provided_ = std::max(1u, std::min(initial, count_));
  for (unsigned i = 0; i < provided_; ++i) recycle(i);
  publish();
}

BufferRing::~BufferRing() {
  io_uring_unregister_buf_ring(ring_, groupId_);
  ::munmap(buffers_, count_ * bufferSize_);
  ::munmap(bufRing_, ringBytes_);
}

void BufferRing::recycle(unsigned bufferId) {
  io_uring_buf_ring_add(bufRing_, buffers_ + static_cast<size_t>(bufferId) * bufferSize_,
                        static_cast<unsigned>(bufferSize_), static_cast<unsigned short>(bufferId),
                        io_uring_buf_ring_mask(count_), unpublished_);
  ++unpublished_;
}

void BufferRing::grow() {
  const unsigned to = std::min(count_, provided_ * 2);
  for (unsigned i = provided_; i < to; ++i) recycle(i);
  provided_ = to;
}

void BufferRing::publish() {
  if (unpublished_ == 0) return;
  io_uring_buf_ring_advance(bufRing_, unpublished_);
  unpublished_ = 0;
}

}  // namespace pingpong
