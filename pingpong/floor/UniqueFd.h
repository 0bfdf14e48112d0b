// Owns one file descriptor and closes it on destruction. Move-only. Used by
// the floor programs (these and bench/udp's), which deliberately avoid
// libnet, for sockets, epoll instances and signalfds. Not thread-safe; the
// owner decides.
#pragma once

#include <unistd.h>

#include <utility>

namespace pingpong {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }

  // close()'s result is ignored on purpose: on Linux the fd is gone even when
  // close() reports EINTR or EIO, so retrying could close someone else's fd.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace pingpong
