// UringRing: one loop's io_uring instance and its submission queue. Built
// from IoUringOptions with the setup flags the probe found (or SQPOLL in
// their place when asked for; if the kernel refuses it, the probe's flags
// after all, with a warning), it hands out SQEs (submitting the queue first
// when it is full), submits and waits once per loop turn, and closes fds
// through the ring (IORING_OP_CLOSE) rather than with a system call each
// (except with SQPOLL: closeFile()).
// What the completions mean is UringPoller's business.
//
// Created and used only on the loop's thread (the kernel enforces it where
// the ring has SINGLE_ISSUER: the probe's first two choices, never with
// SQPOLL).
#pragma once

#include <liburing.h>

#include <vector>

#include "base/Timestamp.h"
#include "base/UniqueFd.h"
#include "net/EventLoopOptions.h"

namespace libnet {

class UringRing {
 public:
  // `setupFlags`: the probe's (UringProbe). Throws std::system_error naming
  // the sizes (and RLIMIT_MEMLOCK, the usual reason) if the ring cannot be
  // made.
  UringRing(const IoUringOptions& options, unsigned setupFlags);
  // Submits what is still queued (closes of connections already gone, fds
  // posted to other rings), or, failing that, closes those fds itself; then
  // releases the ring.
  ~UringRing();
  UringRing(const UringRing&) = delete;
  UringRing& operator=(const UringRing&) = delete;

  [[nodiscard]] io_uring* get() { return &ring_; }
  // The IORING_SETUP_* flags chosen for the ring: the probe's, or SQPOLL
  // alone when it was asked for and granted. IORING_SETUP_CQSIZE, which
  // every ring is set up with as well, is not included.
  [[nodiscard]] unsigned setupFlags() const { return setupFlags_; }
  [[nodiscard]] bool sqPoll() const { return (setupFlags_ & IORING_SETUP_SQPOLL) != 0; }
  // The ring's fd (what another ring's IORING_OP_MSG_RING names).
  [[nodiscard]] int fd() const { return ring_.ring_fd; }
  // IORING_FEAT_* of the kernel that made the ring.
  [[nodiscard]] unsigned features() const { return ring_.features; }

  // An SQE to fill; submits the queue first if it is full.
  [[nodiscard]] io_uring_sqe* getSqe();
  // Submits what was prepared and waits at most `timeout` for a completion.
  void submitAndWait(Duration timeout);
  // Submits what was prepared, without waiting.
  void submit();
  // `fd` now belongs to the SQE just prepared (which closes it or takes it
  // elsewhere): the destructor closes it if that SQE was never submitted.
  void ownUntilSubmitted(int fd) { fdsUnsubmitted_.push_back(fd); }
  // Closes `fd` through the ring with the next submit. With SQPOLL, whose
  // kernel thread takes entries at its own pace, a plain close(2).
  void closeFile(UniqueFd fd);

 private:
  // After a submit: once the queue is empty, the fds its SQEs carried are
  // the kernel's.
  void submitted() {
    if (!fdsUnsubmitted_.empty() && io_uring_sq_ready(&ring_) == 0) fdsUnsubmitted_.clear();
  }

  io_uring ring_{};
  unsigned setupFlags_ = 0;
  std::vector<int> fdsUnsubmitted_;  // ownUntilSubmitted() fds not yet submitted
};

}  // namespace libnet
