// UringProbe: whether io_uring can run in this process, asked of the kernel
// once: ring setup with SINGLE_ISSUER|DEFER_TASKRUN (fewer flags if
// refused), the opcodes libnet needs, buffer-ring registration, and a
// multishot recv into a buffer ring actually receiving a byte over a
// socketpair (kernels before 6.0 know the opcodes but refuse multishot recv,
// which the completion path relies on), and whether a multishot recv can be
// given a total limit (used where it can, not required). The backend factory
// asks it before building an io_uring loop; the answer, and the setup flags
// it found, hold for the life of the process.
//
// The probe's ring lives on a short-lived thread of its own: after a ring is
// closed the kernel interrupts each thread that used it once, so a blocking
// call with SO_RCVTIMEO/SO_SNDTIMEO there fails with EINTR. The same holds
// for a loop's ring on the loop's thread: a program that runs a kIoUring loop
// on its main thread and then makes such calls after the loop is gone should
// retry them on EINTR.
//
// Any thread (the first call probes, later ones read the result).
#pragma once

#include <string>

namespace libnet {

class UringProbe {
 public:
  struct Result {
    bool ok = false;
    unsigned setupFlags = 0;
    int error = 0;       // errno of the failure
    std::string detail;  // why it failed, or which flags it runs with
    // Optional: IORING_OP_MSG_RING (5.18+), with which one loop's ring
    // posts an fd to another's (Poller::postFd); without it the loops'
    // queues carry them.
    bool msgRing = false;
    // A multishot recv takes a limit on the bytes it delivers in all (the
    // SQE's optlen, newer kernels: older ones refuse it with EINVAL): seen
    // ending after exactly that many. Not needed to run; without it a
    // connection near its output limit receives single-shot instead.
    bool boundedMultishotRecv = false;
    // Multishot recvmsg into a buffer ring (IORING_RECV_MULTISHOT on
    // IORING_OP_RECVMSG) works on a datagram socket: the io_uring datagram
    // strategy receives with it; without it, by readiness and recvmsg(2).
    bool multishotRecvmsg = false;
  };
  // The probe's stages, for simulating a kernel that fails one of them.
  enum class Stage { kNone, kSetup, kOpcodes, kBufferRing, kMultishotRecv, kMultishotRecvmsg };

  // Probes on the first call; the same result after.
  static const Result& result();
  // Tests only, before the first result() of the process: the probe reports
  // `stage` as missing (ENOSYS, "(simulated)" in the detail) without asking
  // the kernel about it.
  static void simulateFailure(Stage stage);
};

}  // namespace libnet
