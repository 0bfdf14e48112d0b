#include "net/poller/BufferRing.h"

#include <sys/mman.h>

#include <algorithm>

#include <cerrno>
#include <system_error>

namespace libnet {

namespace {

void* mapAnonymous(size_t bytes, const char* what) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::system_error(errno, std::system_category(), what);
  return p;
}

// Not in liburing 2.3's headers: IOU_PBUF_RING_INC (Linux 6.12) and the
// completion flag saying the kernel keeps using the buffer.
constexpr uint16_t kIncrementalFlag = 2;
constexpr uint32_t kBufferMoreFlag = 1U << 4;

}  // namespace

BufferRing::BufferRing(io_uring* ring, uint16_t groupId, uint32_t capacity, uint32_t size,
                       uint32_t initial, bool incremental)
    : ring_(ring),
      groupId_(groupId),
      capacity_(capacity),
      size_(size),
      used_(capacity, 0),
      refs_(capacity, 0),
      kernelDone_(capacity, false),
      inRing_(capacity, false) {
  if (capacity == 0 || (capacity & (capacity - 1)) != 0 || capacity > 32768) {
    throw std::system_error(EINVAL, std::system_category(),
                            "buffer ring size must be a power of two up to 32768");
  }
  // liburing 2.3 has no io_uring_setup_buf_ring(): map and register by hand.
  // The ring must be page-aligned, which mmap guarantees. The buffers'
  // memory is only reserved here: a page becomes resident when the kernel
  // first writes into it, so buffers never provided cost nothing.
  bufRingBytes_ = capacity * sizeof(io_uring_buf);
  bufRing_ = static_cast<io_uring_buf_ring*>(mapAnonymous(bufRingBytes_, "mmap buffer ring"));
  buffersBytes_ = static_cast<size_t>(capacity) * size;
  try {
    buffers_ = static_cast<char*>(mapAnonymous(buffersBytes_, "mmap ring buffers"));
  } catch (...) {
    ::munmap(bufRing_, bufRingBytes_);
    throw;
  }
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uint64_t>(bufRing_);
  reg.ring_entries = capacity;
  reg.bgid = groupId;
  int rc = -EINVAL;
  if (incremental) {
    // The field liburing 2.3 calls `pad` is the ring's flags on newer kernels.
    reg.pad = kIncrementalFlag;
    rc = io_uring_register_buf_ring(ring_, &reg, 0);
    incremental_ = rc == 0;
    reg.pad = 0;
  }
  if (rc == -EINVAL) rc = io_uring_register_buf_ring(ring_, &reg, 0);  // older kernels
  if (rc < 0) {
    ::munmap(buffers_, buffersBytes_);
    ::munmap(bufRing_, bufRingBytes_);
    // The ring of buffer descriptors is pinned and counts against
    // RLIMIT_MEMLOCK, like the io_uring itself.
    throw std::system_error(-rc, std::system_category(),
                            rc == -ENOMEM ? "io_uring_register_buf_ring (RLIMIT_MEMLOCK too low?)"
                                          : "io_uring_register_buf_ring");
  }
  io_uring_buf_ring_init(bufRing_);
  initial_ = std::max<uint32_t>(1, std::min(initial, capacity));
  provide(0, initial_);
}

BufferRing::~BufferRing() {
  io_uring_unregister_buf_ring(ring_, groupId_);
  ::munmap(buffers_, buffersBytes_);
  ::munmap(bufRing_, bufRingBytes_);
}

void BufferRing::provide(uint32_t from, uint32_t to) {
  const int mask = io_uring_buf_ring_mask(capacity_);
  int added = 0;
  for (uint32_t i = from; i < to; ++i) {
    // Still in the ring, or out, since a shrink: it stays in circulation now.
    if (inRing_[i] || kernelDone_[i]) continue;
    io_uring_buf_ring_add(bufRing_, buffers_ + static_cast<size_t>(i) * size_, size_,
                          static_cast<uint16_t>(i), mask, added++);
    inRing_[i] = true;
  }
  io_uring_buf_ring_advance(bufRing_, added);
  provided_ = std::max(provided_, to);
}

bool BufferRing::grow() {
  if (provided_ >= capacity_) return false;
  provide(provided_, std::min(capacity_, provided_ * 2));
  grew_ = true;
  return true;
}

void BufferRing::shrinkIfQuiet(bool trimPages) {
  trimPages_ = trimPages;
  const uint32_t peak = peakDemand_;
  const bool grew = grew_;
  peakDemand_ = lent_;
  grew_ = false;
  if (grew || provided_ <= initial_ || peak >= provided_ / 4) return;
  uint32_t keep = initial_;
  while (keep < 2 * peak && keep < provided_) keep *= 2;
  if (keep >= provided_) return;
  const uint32_t old = provided_;
  provided_ = keep;
  if (trimPages) trim(keep, old);
}

void BufferRing::trim(uint32_t from, uint32_t to) {
  // A buffer the kernel has filled whose completion still waits in the CQ
  // looks untouched here (in the ring, nothing used), yet holds a peer's
  // bytes: every buffer a waiting completion names is kept. (The caller
  // makes sure no completion it has taken out of the CQ is still unhandled,
  // and that the kernel fills no buffer while this runs.)
  pending_.clear();
  unsigned head = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(ring_, head, cqe) {
    if (cqe->flags & IORING_CQE_F_BUFFER) {
      pending_.push_back(static_cast<uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT));
    }
  }
  std::sort(pending_.begin(), pending_.end());
  // Runs of buffers that sit in the ring untouched (in incremental mode a
  // buffer the kernel has begun to fill is skipped), one madvise per run.
  uint32_t run = from;
  const auto flush = [&](uint32_t end) {
    if (end > run) {
      ::madvise(buffers_ + static_cast<size_t>(run) * size_, static_cast<size_t>(end - run) * size_,
                MADV_DONTNEED);
    }
  };
  for (uint32_t i = from; i < to; ++i) {
    // In the ring untouched, or back and out of circulation: no one's bytes.
    const bool idle = (inRing_[i] ? used_[i] == 0 : !kernelDone_[i] && refs_[i] == 0) &&
                      !std::binary_search(pending_.begin(), pending_.end(), i);
    if (!idle) {
      flush(i);
      run = i + 1;
    }
  }
  flush(to);
}

BufferRing::Received BufferRing::received(uint32_t cqeFlags, int32_t res) {
  const auto id = static_cast<uint16_t>(cqeFlags >> IORING_CQE_BUFFER_SHIFT);
  const size_t length = res > 0 ? static_cast<size_t>(res) : 0;
  const Received r{id, data(id, length, used_[id])};
  if (incremental_ && (cqeFlags & kBufferMoreFlag)) {
    used_[id] += static_cast<uint32_t>(length);  // the next receive continues here
  } else {
    kernelDone_[id] = true;
    inRing_[id] = false;
  }
  return r;
}

void BufferRing::maybeRecycle(uint16_t bufferId) {
  if (refs_[bufferId] != 0 || !kernelDone_[bufferId]) return;
  kernelDone_[bufferId] = false;
  used_[bufferId] = 0;
  if (bufferId >= provided_) {  // out of circulation since a shrink
    if (trimPages_) trim(bufferId, bufferId + 1u);
    return;
  }
  recycle(bufferId);
}

void BufferRing::recycle(uint16_t bufferId) {
  inRing_[bufferId] = true;
  io_uring_buf_ring_add(bufRing_, buffers_ + static_cast<size_t>(bufferId) * size_, size_, bufferId,
                        io_uring_buf_ring_mask(capacity_), 0);
  io_uring_buf_ring_advance(bufRing_, 1);
}

}  // namespace libnet
