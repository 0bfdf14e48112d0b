// UniqueFd: sole owner of a file descriptor; closes it on destruction.
// Move-only. Not thread-safe by itself: the owner decides which thread uses it.
#pragma once

#include <unistd.h>

#include <utility>

namespace libnet {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }

  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Gives up ownership without closing.
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }

  // Closes the current fd (if any) and takes ownership of `fd`.
  void reset(int fd = -1) {
    const int old = std::exchange(fd_, fd);
    // close() errors (EINTR, EIO) cannot be acted on usefully here and the fd
    // is released either way on Linux, so they are ignored.
    if (old >= 0) ::close(old);
  }

 private:
  int fd_ = -1;
};

}  // namespace libnet
