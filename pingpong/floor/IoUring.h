// Owns one io_uring instance (liburing's struct io_uring) and tears it down
// on destruction. Creation tries SINGLE_ISSUER|DEFER_TASKRUN first and falls
// back to fewer flags on kernels that reject them. With SINGLE_ISSUER the ring
// belongs to the creating thread: create it on the thread that will use it.
#pragma once

#include <liburing.h>

#include <string>

namespace pingpong {

class IoUring {
 public:
  // Throws std::system_error("io_uring_queue_init_params") if even a ring
  // without optional flags cannot be created.
  IoUring(unsigned sqEntries, unsigned cqEntries);
  IoUring(const IoUring&) = delete;
  IoUring& operator=(const IoUring&) = delete;
  ~IoUring();

  [[nodiscard]] io_uring* get() { return &ring_; }
  // Names of the setup flags that were accepted, for diagnostics.
  [[nodiscard]] const std::string& flagNames() const { return flagNames_; }

  // Returns an SQE, submitting what is queued first if the SQ is full, so a
  // burst of completions can never fail for lack of SQ space.
  [[nodiscard]] io_uring_sqe* getSqe();

 private:
  io_uring ring_{};
  std::string flagNames_;
};

}  // namespace pingpong
