#include "tests/net/AllocationCounter.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace libnet::test {
namespace {

std::atomic<long> g_allocations{0};
std::atomic<long> g_bytes{0};
thread_local bool t_counting = false;

// glibc's chunk header: the size word in front of every block.
constexpr long kChunkHeader = sizeof(std::size_t);

long heldBytes(void* p) { return static_cast<long>(::malloc_usable_size(p)) + kChunkHeader; }

}  // namespace

void setCountingAllocations(bool on) { t_counting = on; }

long countedAllocations() { return g_allocations.load(std::memory_order_relaxed); }

long countedBytes() { return g_bytes.load(std::memory_order_relaxed); }

void* countedAllocation(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  if (t_counting) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(heldBytes(p), std::memory_order_relaxed);
  }
  return p;
}

void countedFree(void* p) noexcept {
  if (p != nullptr && t_counting) g_bytes.fetch_sub(heldBytes(p), std::memory_order_relaxed);
  std::free(p);
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
void operator delete(void* p) noexcept { libnet::test::countedFree(p); }
void operator delete[](void* p) noexcept { libnet::test::countedFree(p); }
void operator delete(void* p, std::size_t) noexcept { libnet::test::countedFree(p); }
void operator delete[](void* p, std::size_t) noexcept { libnet::test::countedFree(p); }
#endif
