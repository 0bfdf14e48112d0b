// BufferStorage: the bytes a Buffer owns, in one block.
//
// Three differences from a std::vector<char>, the first two measured on an
// echo server with 60 peers that send and never read (docs/benchmarks.md,
// "Peers that send and never read: memory per peer, and after they leave"):
// - Blocks of kMapThreshold bytes and more come straight from mmap and go
//   back with munmap. Through malloc, glibc raises its mmap threshold after
//   the first large block is freed, so later 1 MiB output buffers came from
//   the heap, grew there by doubling and left it fragmented, the heap far
//   larger than the bytes queued in it and resident until a malloc_trim.
// - Growing leaves the new bytes uninitialised (no zero-fill, and no loop
//   over them): a page becomes resident when bytes are written into it, not
//   when the Buffer reserves it.
// - Blocks of kInlineSize bytes or fewer (an empty Buffer's prepend area)
//   live inside the object: a connection's empty buffers cost no
//   allocation (three per short connection before).
//
// Move-only; not thread-safe (owned by one Buffer).
#pragma once

#include <cstddef>

namespace libnet {

class BufferStorage {
 public:
  static constexpr size_t kMapThreshold = 128 * 1024;
  static constexpr size_t kInlineSize = 8;

  explicit BufferStorage(size_t size = 0);  // throws std::bad_alloc
  ~BufferStorage();
  BufferStorage(BufferStorage&& other) noexcept;
  BufferStorage& operator=(BufferStorage&& other) noexcept;
  BufferStorage(const BufferStorage&) = delete;
  BufferStorage& operator=(const BufferStorage&) = delete;

  [[nodiscard]] char* data() { return data_; }
  [[nodiscard]] const char* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }
  void swap(BufferStorage& other) noexcept;

  // Grows to `size` bytes (more than now), keeping the first `keep`; the
  // rest is uninitialised. Throws std::bad_alloc.
  void grow(size_t size, size_t keep);
  // Hands back the whole pages inside [data() + from, data() + to) of
  // mapped storage (they read as zeros afterwards); no-op for heap storage.
  void releasePages(size_t from, size_t to) noexcept;
  [[nodiscard]] bool mapped() const { return size_ >= kMapThreshold; }

 private:
  [[nodiscard]] bool isInline() const { return data_ == inline_; }
  // A block of `size` bytes: inline_ if small enough, else the heap or mmap.
  char* allocate(size_t size);
  void deallocate() noexcept;  // the current block

  char* data_ = nullptr;
  size_t size_ = 0;
  alignas(8) char inline_[kInlineSize];
};

}  // namespace libnet
