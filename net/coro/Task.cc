#include "net/coro/Task.h"

namespace libnet::coro {

namespace {
thread_local uint64_t t_frameAllocations = 0;
}  // namespace

void* detail::FrameBase::operator new(std::size_t size) {
  ++t_frameAllocations;
  return ::operator new(size);
}

void detail::FrameBase::operator delete(void* frame, std::size_t size) noexcept {
  ::operator delete(frame, size);
}

uint64_t frameAllocations() { return t_frameAllocations; }

}  // namespace libnet::coro
