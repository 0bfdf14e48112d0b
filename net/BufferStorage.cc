#include "net/BufferStorage.h"

#include <sys/mman.h>
#include <unistd.h>

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

}  // namespace libnet::detail
