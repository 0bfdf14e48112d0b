#include "net/poller/UringProbe.h"

#include <liburing.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <exception>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>

#include "base/Logging.h"
#include "base/SignalMask.h"
#include "base/UniqueFd.h"
#include "net/poller/BufferRing.h"

namespace libnet {

namespace {

constexpr uint16_t kProbeBufferGroup = 0;

std::string errnoText(int err) { return std::string(strerrorTl(err)); }

// A probe stage that failed: the errno and why.
struct ProbeFailure {
  int error;
  std::string detail;
};

std::atomic<UringProbe::Stage> g_simulatedFailure{UringProbe::Stage::kNone};

std::optional<ProbeFailure> simulated(UringProbe::Stage stage, std::string_view what) {
  if (g_simulatedFailure.load(std::memory_order_relaxed) != stage) return std::nullopt;
  return ProbeFailure{ENOSYS, std::string(what) + " (simulated)"};
}

// The opcodes libnet needs; sets *msgRing to whether the optional
// IORING_OP_MSG_RING is there too.
std::optional<ProbeFailure> checkOpcodes(io_uring* ring, bool* msgRing) {
  if (auto failure = simulated(UringProbe::Stage::kOpcodes, "kernel lacks IORING_OP_RECV")) {
    return failure;
  }
  struct Needed {
    int op;
    const char* name;
  };
  const Needed needed[] = {
      {IORING_OP_POLL_ADD, "POLL_ADD"}, {IORING_OP_POLL_REMOVE, "POLL_REMOVE"},
      {IORING_OP_RECV, "RECV"},         {IORING_OP_SEND, "SEND"},
      {IORING_OP_ACCEPT, "ACCEPT"},     {IORING_OP_ASYNC_CANCEL, "ASYNC_CANCEL"},
  };
  io_uring_probe* probe = io_uring_get_probe_ring(ring);
  if (!probe) return ProbeFailure{ENOSYS, "io_uring_get_probe_ring failed"};
  std::optional<ProbeFailure> failure;
  for (const Needed& n : needed) {
    if (!io_uring_opcode_supported(probe, n.op)) {
      failure = ProbeFailure{ENOSYS, std::string("kernel lacks IORING_OP_") + n.name};
      break;
    }
  }
  *msgRing = io_uring_opcode_supported(probe, IORING_OP_MSG_RING) != 0;
  io_uring_free_probe(probe);
  return failure;
}

// Whether a multishot recv stops by itself after a total number of bytes
// (IORING_RECV_MULTISHOT with the SQE's optlen, which liburing 2.3's header
// calls file_index; kernels without it refuse a non-zero one with EINVAL): on
// a socketpair holding 3 bytes, a recv limited to 2 (each receive, and in
// all) must deliver 2 and end (no IORING_CQE_F_MORE). In the buffer group
// that checkMultishotRecv() registered, while it still has room.
bool checkBoundedMultishotRecv(io_uring* ring) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) return false;
  const UniqueFd ours(pair[0]);
  const UniqueFd theirs(pair[1]);
  if (::write(theirs.get(), "xyz", 3) != 3) return false;
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe == nullptr) return false;
  io_uring_prep_recv_multishot(sqe, ours.get(), nullptr, 2, 0);
  sqe->file_index = 2;
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kProbeBufferGroup;
  io_uring_sqe_set_data64(sqe, 2);
  __kernel_timespec timeout{};
  timeout.tv_sec = 1;
  io_uring_cqe* cqe = nullptr;
  if (io_uring_submit_and_wait_timeout(ring, &cqe, 1, &timeout, nullptr) < 0 || cqe == nullptr) {
    return false;
  }
  const bool bounded = cqe->user_data == 2 && cqe->res == 2 && (cqe->flags & IORING_CQE_F_BUFFER) &&
                       !(cqe->flags & IORING_CQE_F_MORE);
  io_uring_cqe_seen(ring, cqe);
  return bounded;
}

// Whether a multishot recvmsg into a buffer ring (buffer group 1, its own)
// receives a datagram, name and payload laid out as liburing's
// io_uring_recvmsg_* helpers read them.
bool checkMultishotRecvmsg(io_uring* ring) {
  if (simulated(UringProbe::Stage::kMultishotRecvmsg, "multishot recvmsg")) return false;
  constexpr uint16_t kGroup = 1;
  std::optional<BufferRing> buffers;
  try {
    buffers.emplace(ring, kGroup, 2, 4096, 2, false);
  } catch (const std::system_error&) {
    return false;
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) return false;
  const UniqueFd ours(pair[0]);
  const UniqueFd theirs(pair[1]);
  if (::write(theirs.get(), "xyz", 3) != 3) return false;
  msghdr msg{};
  msg.msg_namelen = sizeof(sockaddr_storage);
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe == nullptr) return false;
  io_uring_prep_recvmsg_multishot(sqe, ours.get(), &msg, MSG_TRUNC);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kGroup;
  io_uring_sqe_set_data64(sqe, 3);
  __kernel_timespec timeout{};
  timeout.tv_sec = 1;
  io_uring_cqe* cqe = nullptr;
  if (io_uring_submit_and_wait_timeout(ring, &cqe, 1, &timeout, nullptr) < 0 || cqe == nullptr) {
    return false;
  }
  bool ok = cqe->user_data == 3 && cqe->res > 0 && (cqe->flags & IORING_CQE_F_BUFFER);
  if (ok) {
    const BufferRing::Received r = buffers->received(cqe->flags, cqe->res);
    auto* out = io_uring_recvmsg_validate(const_cast<char*>(r.bytes.data()), cqe->res, &msg);
    ok = out != nullptr && io_uring_recvmsg_payload_length(out, cqe->res, &msg) == 3;
  }
  io_uring_cqe_seen(ring, cqe);
  // Cancel it before its buffer ring goes (ours closes the socket, but the
  // request holds the file).
  sqe = io_uring_get_sqe(ring);
  if (sqe != nullptr) {
    io_uring_prep_cancel64(sqe, 3, 0);
    io_uring_sqe_set_data64(sqe, 4);
    io_uring_submit(ring);
  }
  return ok;
}

// What the completion path needs beyond opcodes: a buffer ring, and a
// multishot recv selecting from it (6.0+; older kernels answer EINVAL), seen
// to deliver a byte written into a socketpair.
// Also sets `*bounded` (checkBoundedMultishotRecv).
std::optional<ProbeFailure> checkMultishotRecv(io_uring* ring, bool* bounded) {
  if (auto failure = simulated(UringProbe::Stage::kBufferRing,
                               "io_uring_register_buf_ring: kernel lacks buffer rings")) {
    return failure;
  }
  std::optional<BufferRing> buffers;
  try {
    buffers.emplace(ring, kProbeBufferGroup, 2, 4096, 2);
  } catch (const std::system_error& e) {
    return ProbeFailure{e.code().value(), e.what()};
  }
  if (auto failure = simulated(UringProbe::Stage::kMultishotRecv,
                               "kernel lacks multishot recv (IORING_RECV_MULTISHOT)")) {
    return failure;
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
    return ProbeFailure{errno, "socketpair: " + errnoText(errno)};
  }
  const UniqueFd ours(pair[0]);
  const UniqueFd theirs(pair[1]);
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  io_uring_prep_recv_multishot(sqe, ours.get(), nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kProbeBufferGroup;
  io_uring_sqe_set_data64(sqe, 1);
  if (::write(theirs.get(), "x", 1) != 1) return ProbeFailure{errno, "write: " + errnoText(errno)};
  __kernel_timespec timeout{};
  timeout.tv_sec = 1;
  io_uring_cqe* cqe = nullptr;
  if (const int rc = io_uring_submit_and_wait_timeout(ring, &cqe, 1, &timeout, nullptr);
      rc < 0 || cqe == nullptr) {
    const int err = rc < 0 ? -rc : ETIME;
    return ProbeFailure{err, "multishot recv test: " + errnoText(err)};
  }
  const int res = cqe->res;
  const unsigned flags = cqe->flags;
  io_uring_cqe_seen(ring, cqe);
  if (res == -EINVAL) {
    return ProbeFailure{EINVAL, "kernel lacks multishot recv (IORING_RECV_MULTISHOT)"};
  }
  if (res != 1 || !(flags & IORING_CQE_F_BUFFER)) {
    const int err = res < 0 ? -res : EPROTO;
    return ProbeFailure{err, "multishot recv into a buffer ring returned " + std::to_string(res)};
  }
  *bounded = checkBoundedMultishotRecv(ring);
  return std::nullopt;  // the recvs still armed go with the ring
}

UringProbe::Result runProbe() {
  UringProbe::Result result;
  if (auto failure =
          simulated(UringProbe::Stage::kSetup, "io_uring_queue_init: Function not implemented")) {
    result.error = failure->error;
    result.detail = failure->detail;
    return result;
  }
  // Best first. DEFER_TASKRUN (6.1+) runs completion work only when this
  // thread enters the kernel to wait, which is what a loop wants; it needs
  // SINGLE_ISSUER. Older kernels refuse unknown flags with EINVAL.
  const unsigned candidates[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
      IORING_SETUP_COOP_TASKRUN,
      0,
  };
  io_uring ring{};
  int rc = -EINVAL;
  unsigned flags = 0;
  for (const unsigned candidate : candidates) {
    io_uring_params params{};
    params.flags = candidate;
    rc = io_uring_queue_init_params(8, &ring, &params);
    flags = candidate;
    if (rc != -EINVAL) break;
  }
  if (rc < 0) {
    result.error = -rc;
    result.detail = "io_uring_queue_init: " + errnoText(-rc);
    return result;
  }
  bool msgRing = false;
  std::optional<ProbeFailure> failure = checkOpcodes(&ring, &msgRing);
  bool bounded = false;
  if (!failure) failure = checkMultishotRecv(&ring, &bounded);
  const bool recvmsg = !failure && checkMultishotRecvmsg(&ring);
  io_uring_queue_exit(&ring);
  if (failure) {
    result.error = failure->error;
    result.detail = std::move(failure->detail);
    return result;
  }
  result.ok = true;
  result.setupFlags = flags;
  result.msgRing = msgRing;
  result.boundedMultishotRecv = bounded;
  result.multishotRecvmsg = recvmsg;
  result.detail = (flags & IORING_SETUP_DEFER_TASKRUN)   ? "SINGLE_ISSUER|DEFER_TASKRUN"
                  : (flags & IORING_SETUP_SINGLE_ISSUER) ? "SINGLE_ISSUER|COOP_TASKRUN"
                  : flags                                ? "COOP_TASKRUN"
                                                         : "no setup flags";
  return result;
}

}  // namespace

void UringProbe::simulateFailure(Stage stage) {
  g_simulatedFailure.store(stage, std::memory_order_relaxed);
}

const UringProbe::Result& UringProbe::result() {
  // On a thread of its own: once a ring is closed, the kernel's clean-up
  // interrupts every thread that used it (task work with TWA_SIGNAL), and a
  // blocking call with a timeout there (connect or recv under SO_SNDTIMEO /
  // SO_RCVTIMEO) fails with EINTR. The caller's thread must not see that for
  // a ring it never asked for; a thread that has exited is not interrupted.
  static const Result result = [] {
    Result probed;
    std::exception_ptr failure;
    try {
      std::thread probe;
      {
        // Like every thread of the library's, it never takes a process
        // signal (base/SignalMask.h).
        BlockAsyncSignals blocked;
        probe = std::thread([&probed, &failure] {
          try {
            probed = runProbe();
          } catch (...) {
            failure = std::current_exception();
          }
        });
      }
      probe.join();
    } catch (const std::system_error&) {
      return runProbe();  // no thread to be had: probe here
    }
    if (failure) std::rethrow_exception(failure);
    return probed;
  }();
  return result;
}

}  // namespace libnet
