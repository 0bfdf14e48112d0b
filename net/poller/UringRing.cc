#include "net/poller/UringRing.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <system_error>

#include "base/Logging.h"
#include "net/poller/UringUserData.h"

namespace libnet {

namespace {

int initRing(io_uring* ring, const IoUringOptions& options, unsigned flags, uint32_t sqIdleMs) {
  io_uring_params params{};
  params.flags = flags | IORING_SETUP_CQSIZE;
  params.cq_entries = options.cqEntries;
  params.sq_thread_idle = sqIdleMs;
  return io_uring_queue_init_params(options.sqEntries, ring, &params);
}

}  // namespace

UringRing::UringRing(const IoUringOptions& options, unsigned setupFlags) {
  unsigned flags = setupFlags;
  int rc = -EINVAL;
  if (options.sqPollIdleMs > 0) {
    rc = initRing(&ring_, options, IORING_SETUP_SQPOLL, options.sqPollIdleMs);
    if (rc == 0) {
      flags = IORING_SETUP_SQPOLL;
    } else {
      LOG_WARN << "io_uring: SQPOLL refused (" << strerrorTl(-rc) << "); running without it";
    }
  }
  if (rc != 0) rc = initRing(&ring_, options, flags, 0);
  if (rc < 0) {
    // The ring's memory counts against RLIMIT_MEMLOCK (per user, for
    // processes without CAP_IPC_LOCK): the usual reason, worth naming.
    throw std::system_error(-rc, std::system_category(),
                            "io_uring_queue_init_params (" + std::to_string(options.sqEntries) +
                                " SQ / " + std::to_string(options.cqEntries) + " CQ entries" +
                                (rc == -ENOMEM ? "; RLIMIT_MEMLOCK too low?)" : ")"));
  }
  setupFlags_ = flags;
  // Saves the fd lookup on every io_uring_enter; optional.
  io_uring_register_ring_fd(&ring_);
}

UringRing::~UringRing() {
  if (!fdsUnsubmitted_.empty()) {
    // What is still queued by now is closes and cancels of connections
    // already gone (EventLoop's destructor turned the poller until no op
    // was left in flight): submit it. A refused submit (say, from a thread
    // other than the ring's) submitted nothing: close the fds here.
    if (io_uring_submit(&ring_) < 0) {
      for (const int fd : fdsUnsubmitted_) ::close(fd);
    }
  }
  io_uring_queue_exit(&ring_);
}

io_uring_sqe* UringRing::getSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    io_uring_submit(&ring_);
    submitted();
    // With SQPOLL the submit only hands the entries to the kernel's thread:
    // wait until it has taken some.
    if (sqPoll()) io_uring_sqring_wait(&ring_);
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) LOG_FATAL << "io_uring submission queue stuck full";
  }
  return sqe;
}

void UringRing::submitAndWait(Duration timeout) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  __kernel_timespec ts{};
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  io_uring_cqe* first = nullptr;
  const int rc = io_uring_submit_and_wait_timeout(&ring_, &first, 1, &ts, nullptr);
  submitted();
  if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
    LOG_ERROR << "io_uring_submit_and_wait_timeout: " << strerrorTl(-rc);
  }
}

void UringRing::submit() {
  const int rc = io_uring_submit(&ring_);
  submitted();
  if (rc < 0 && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
    LOG_ERROR << "io_uring_submit: " << strerrorTl(-rc);
  }
}

void UringRing::closeFile(UniqueFd fd) {
  if (!fd || sqPoll()) return;  // closed by ~UniqueFd
  io_uring_sqe* sqe = getSqe();
  const int raw = fd.release();
  io_uring_prep_close(sqe, raw);
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kIgnore, 0));
  ownUntilSubmitted(raw);
}

}  // namespace libnet
