#include "net/BufferStorage.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

namespace libnet {

namespace {

size_t pageSize() {
  static const size_t page = [] {
    const long size = ::sysconf(_SC_PAGESIZE);
    return size > 0 ? static_cast<size_t>(size) : size_t{4096};
  }();
  return page;
}

size_t pageRounded(size_t bytes) { return (bytes + pageSize() - 1) / pageSize() * pageSize(); }

}  // namespace

BufferStorage::BufferStorage(size_t size) : data_(allocate(size)), size_(size) {}

BufferStorage::~BufferStorage() { deallocate(); }

BufferStorage::BufferStorage(BufferStorage&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {
  if (data_ == other.inline_) {
    std::memcpy(inline_, other.inline_, kInlineSize);
    data_ = inline_;
  }
}

BufferStorage& BufferStorage::operator=(BufferStorage&& other) noexcept {
  BufferStorage moved(std::move(other));
  swap(moved);
  return *this;
}

void BufferStorage::swap(BufferStorage& other) noexcept {
  const bool mineInline = isInline();
  const bool theirsInline = other.isInline();
  char held[kInlineSize];
  std::memcpy(held, inline_, kInlineSize);
  std::memcpy(inline_, other.inline_, kInlineSize);
  std::memcpy(other.inline_, held, kInlineSize);
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  // An inline block moved with its bytes: point at where they are now.
  if (theirsInline) data_ = inline_;
  if (mineInline) other.data_ = other.inline_;
}

void BufferStorage::grow(size_t size, size_t keep) {
  if (size <= kInlineSize && (data_ == nullptr || isInline())) {
    data_ = inline_;  // bytes kept in place
    size_ = size;
    return;
  }
  char* bigger = allocate(size);
  if (keep > 0) std::memcpy(bigger, data_, keep);
  deallocate();
  data_ = bigger;
  size_ = size;
}

void BufferStorage::releasePages(size_t from, size_t to) noexcept {
  if (!mapped() || to <= from) return;
  const auto begin = reinterpret_cast<uintptr_t>(data_ + from);
  const uintptr_t first = (begin + pageSize() - 1) / pageSize() * pageSize();
  const uintptr_t last = reinterpret_cast<uintptr_t>(data_ + to) / pageSize() * pageSize();
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

char* BufferStorage::allocate(size_t size) {
  if (size == 0) return nullptr;
  if (size <= kInlineSize) return inline_;
  if (size < kMapThreshold) return static_cast<char*>(::operator new(size));
  void* p = ::mmap(nullptr, pageRounded(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<char*>(p);
}

void BufferStorage::deallocate() noexcept {
  if (data_ == nullptr || isInline()) return;
  if (size_ < kMapThreshold) {
    ::operator delete(data_);
  } else {
    ::munmap(data_, pageRounded(size_));
  }
}

}  // namespace libnet
