#include "net/BufferStorage.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace libnet::detail {

namespace {

size_t pageRounded(size_t bytes) {
  static const size_t page = [] {
    const long size = ::sysconf(_SC_PAGESIZE);
    return size > 0 ? static_cast<size_t>(size) : size_t{4096};
  }();
  return (bytes + page - 1) / page * page;
}

}  // namespace

void* mapStorage(size_t bytes) {
  void* p = ::mmap(nullptr, pageRounded(bytes), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void unmapStorage(void* p, size_t bytes) noexcept { ::munmap(p, pageRounded(bytes)); }

void releasePages(char* p, size_t bytes) noexcept {
  const size_t page = pageRounded(1);
  const auto begin = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + bytes) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace libnet::detail
