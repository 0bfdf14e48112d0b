// Counts heap allocations for the allocation tests: a test binary that links
// //tests/net:allocation_counter gets a global operator new that counts the
// calls made on a thread while that thread has counting on (the library
// allocates through it), and the bytes they hold: what malloc gave each
// block (malloc_usable_size) plus its chunk header, less the same for the
// blocks that thread frees while counting, so that what a workload leaves
// allocated is what the heap grew by for it. Not under the sanitizers, which
// bring their own allocator: there nothing is counted and
// kCountingAllocations is false, so a test skips itself.
#pragma once

#include <cstddef>

namespace libnet::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kCountingAllocations = false;
#else
inline constexpr bool kCountingAllocations = true;
#endif

// Turns counting on or off for the calling thread.
void setCountingAllocations(bool on);

// The allocations counted so far, on every thread.
long countedAllocations();

// The heap bytes held by what was counted, on every thread: allocated less
// freed (each block with its malloc chunk header).
long countedBytes();

// What the replaced operator new calls: counts (if the calling thread
// counts), then mallocs.
void* countedAllocation(std::size_t size);

// What the replaced operator delete calls: takes the block's bytes off the
// count (if the calling thread counts), then frees it.
void countedFree(void* p) noexcept;

// Counts the calling thread's allocations while alive.
class AllocationCount {
 public:
  AllocationCount() : start_(countedAllocations()) { setCountingAllocations(true); }
  ~AllocationCount() { setCountingAllocations(false); }
  AllocationCount(const AllocationCount&) = delete;
  AllocationCount& operator=(const AllocationCount&) = delete;

  // Those made since construction.
  [[nodiscard]] long count() const { return countedAllocations() - start_; }

 private:
  const long start_;
};

}  // namespace libnet::test
