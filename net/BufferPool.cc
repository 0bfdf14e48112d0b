#include "net/BufferPool.h"

#include <utility>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace libnet {

void BufferPool::lend(Buffer* buffer) {
  if (buffer->readableBytes() > 0 || buffer->capacity() > kSmallCapacity) return;
  if (spare_.empty()) {
    // No large one: a small one that a connection left (recycle()), if it
    // is larger than what the buffer has.
    if (!small_.empty() && small_.back().capacity() > buffer->capacity()) {
      buffer->retrieveAll();
      buffer->swap(small_.back());
      if (small_.back().capacity() <= Buffer::kCheapPrepend) small_.pop_back();
    }
    return;
  }
  buffer->retrieveAll();
  spareBytes_ -= spare_.back().capacity();
  buffer->swap(spare_.back());
  // Kept for the next reclaim, which then needs no allocation; bounded, as a
  // connection that dies holding a lent buffer never trades it back. Not an
  // empty one (no storage of its own, nothing to keep): it would hide the
  // small ones under it from the next lend.
  if (small_.size() < 2 * kMaxSpare && spare_.back().capacity() > Buffer::kCheapPrepend) {
    small_.push_back(std::move(spare_.back()));
  }
  spare_.pop_back();
}

void BufferPool::reclaim(Buffer* buffer) {
  if (buffer->readableBytes() > 0 || buffer->capacity() <= kSmallCapacity) return;
  buffer->retrieveAll();
  if (small_.empty()) small_.emplace_back(0);
  buffer->swap(small_.back());
  Buffer large = std::move(small_.back());
  small_.pop_back();
  if (spare_.size() < kMaxSpare && large.capacity() <= kMaxSpareCapacity &&
      spareBytes_ + large.capacity() <= kMaxSpareBytes) {
    spareBytes_ += large.capacity();
    spare_.push_back(std::move(large));
  } else {
    noteFreed(large.capacity());  // freed here
  }
}

void BufferPool::recycle(Buffer* buffer) {
  if (buffer->readableBytes() > 0) return;
  reclaim(buffer);  // large storage to the spares; `buffer` is small now
  if (buffer->capacity() > Buffer::kCheapPrepend && small_.size() < 2 * kMaxSpare) {
    small_.emplace_back(0);
    small_.back().swap(*buffer);
  }
}

void BufferPool::trimHeap() {
  freedBytes_ = 0;
#ifdef __GLIBC__
  ::malloc_trim(0);
#endif
}

}  // namespace libnet
