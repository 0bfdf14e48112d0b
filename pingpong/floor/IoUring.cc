#include "pingpong/floor/IoUring.h"

#include <cerrno>
#include <system_error>

namespace pingpong {

IoUring::IoUring(unsigned sqEntries, unsigned cqEntries) {
  struct Attempt {
    unsigned flags;
    const char* names;
  };
  // DEFER_TASKRUN runs completion work only when this thread waits, so
  // completions are batched into the wait that is done anyway; it requires
  // SINGLE_ISSUER (kernel 6.1). COOP_TASKRUN (5.19) is the next best: no IPI
  // to interrupt the thread for task work.
  constexpr Attempt kAttempts[] = {
      {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "SINGLE_ISSUER|DEFER_TASKRUN"},
      {IORING_SETUP_COOP_TASKRUN, "COOP_TASKRUN"},
      {0, "none"},
  };
  int ret = -EINVAL;
  for (const Attempt& attempt : kAttempts) {
    io_uring_params params{};
    // A larger CQ than SQ: every connection's multishot recv can post
    // completions between two turns of the loop.
    params.flags = attempt.flags | IORING_SETUP_CQSIZE;
    params.cq_entries = cqEntries;
    ret = io_uring_queue_init_params(sqEntries, &ring_, &params);
    if (ret == 0) {
      flagNames_ = attempt.names;
      break;
    }
    if (ret != -EINVAL) break;
  }
  if (ret < 0) throw std::system_error(-ret, std::generic_category(), "io_uring_queue_init_params");
  // Saves the fd lookup on every io_uring_enter; optional (kernel 5.18).
  (void)io_uring_register_ring_fd(&ring_);
}

IoUring::~IoUring() { io_uring_queue_exit(&ring_); }

io_uring_sqe* IoUring::getSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  return sqe;
}

}  // namespace pingpong
