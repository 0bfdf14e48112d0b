#include "tests/net/AllocationCounter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace libnet::test {
namespace {

std::atomic<long> g_allocations{0};
thread_local bool t_counting = false;

}  // namespace

void setCountingAllocations(bool on) { t_counting = on; }

long countedAllocations() { return g_allocations.load(std::memory_order_relaxed); }

void* countedAllocation(std::size_t size) {
  if (t_counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

}  // namespace libnet::test

// Under the sanitizers their allocator stays in place.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
void* operator new(std::size_t size) { return libnet::test::countedAllocation(size); }
void* operator new[](std::size_t size) { return libnet::test::countedAllocation(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return libnet::test::countedAllocation(size);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif
