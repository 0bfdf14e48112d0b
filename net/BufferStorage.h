// BufferStorage: the allocator behind a Buffer's bytes.
//
// Two differences from std::allocator, both measured on an echo server with
// 60 peers that send and never read (docs/benchmarks.md):
// - Blocks of kMapThreshold bytes and more come straight from mmap and go
//   back with munmap. Through malloc, glibc raises its mmap threshold after
//   the first large block is freed, so later 1 MiB output buffers came from
//   the heap, grew there by doubling and left it fragmented: 106 MB of heap
//   for about 65 MB of buffered bytes, resident until a malloc_trim.
// - Bytes are not zero-filled when a Buffer grows (default-initialised, not
//   value-initialised): a page becomes resident when bytes are written into
//   it, not when the Buffer reserves it.
//
// Stateless; any thread.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace libnet {

namespace detail {
void* mapStorage(size_t bytes);              // throws std::bad_alloc
void unmapStorage(void* p, size_t bytes) noexcept;
// Hands back the whole pages inside [p, p + bytes) of mapped storage; they
// read as zeros afterwards.
void releasePages(char* p, size_t bytes) noexcept;
}  // namespace detail

template <class T>
class BufferStorage {
 public:
  using value_type = T;
  static constexpr size_t kMapThreshold = 128 * 1024;

  BufferStorage() noexcept = default;
  template <class U>
  BufferStorage(const BufferStorage<U>&) noexcept {}  // NOLINT: rebinding

  [[nodiscard]] T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kMapThreshold) return static_cast<T*>(detail::mapStorage(bytes));
    return static_cast<T*>(::operator new(bytes));
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kMapThreshold) {
      detail::unmapStorage(p, bytes);
    } else {
      ::operator delete(p);
    }
  }

  // Growth leaves new bytes uninitialised; copies and moves as usual.
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(const BufferStorage&, const BufferStorage&) noexcept { return true; }
};

}  // namespace libnet
