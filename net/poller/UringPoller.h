// UringPoller: the Poller backend on io_uring, plus the completion interface
// that its connection and acceptor strategies (UringConnectionIo,
// UringAcceptorIo) use.
//
// Readiness (Channels: timerfd, eventfd, connecting sockets, user fds): one
// multishot POLL_ADD per Channel, re-armed when a completion comes without
// IORING_CQE_F_MORE. Like EPOLLET, a channel is reported when its fd becomes
// ready, and its handler drains it.
//
// Completions (Handlers): an owner registers itself and gets a token; the ops
// it submits carry user_data = {op, slot, generation}, never a pointer, so a
// completion that arrives after its owner unregistered is recognised by its
// stale generation and dropped (a provided buffer it holds is recycled, an fd
// it carries is closed). An owner keeps itself alive while it has ops in
// flight.
//
// One io_uring_submit_and_wait_timeout() per loop turn: SQEs prepared during
// callbacks go out with the next turn. Completions are copied out of the CQ in
// poll() and dispatched by dispatchCompletions(), which the loop calls with
// the channel events, so handlers run in the same phase as channel callbacks.
//
// The ring is created (SINGLE_ISSUER) and used only on the loop's thread.
#pragma once

#include <liburing.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/Buffer.h"
#include "net/Poller.h"
#include "net/poller/BufferRing.h"
#include "net/poller/CompletionHandler.h"

namespace libnet {

class UringPoller final : public Poller {
 public:
  using Op = UringOp;
  using Handler = CompletionHandler;
  static constexpr Op kPoll = UringOp::kPoll;
  static constexpr Op kRecv = UringOp::kRecv;
  static constexpr Op kSend = UringOp::kSend;
  static constexpr Op kAccept = UringOp::kAccept;
  static constexpr Op kIgnore = UringOp::kIgnore;

  // Sizes for rings created from now on (process-wide).
  struct Config {
    uint32_t sqEntries = 1024;
    uint32_t cqEntries = 16384;
    uint32_t bufferCount = 2048;  // the most provided buffers; power of two
    uint32_t bufferSize = 16384;
    // Buffers provided at first; more as receives find the ring empty (see
    // BufferRing: a small ring stays in cache).
    uint32_t initialBufferCount = 64;
    // Incremental buffer consumption where the kernel has it (BufferRing).
    bool incrementalBuffers = true;
    // Slots in the ring's table of registered files (at most RLIMIT_NOFILE;
    // 0: none). A connection's socket sits in a slot while it is open, so
    // its recv/send ops skip the per-op file lookup; the fd stays a real fd.
    // Connections beyond the table, or on kernels without sparse tables
    // (before 5.19), use the plain fd; the first one a loop sees beyond the
    // table logs one INFO line. The environment variable
    // LIBNET_URING_FIXED_FILES sets it where the program leaves the default.
    static constexpr uint32_t kDefaultFixedFiles = 16384;
    uint32_t fixedFiles = kDefaultFixedFiles;
    // Opt-in, off by default: > 0 asks for a kernel thread that polls the
    // submission queue (IORING_SETUP_SQPOLL), sleeping after this many ms
    // without work. Submissions then need no system call, but the thread
    // spins on a CPU of its own while there is traffic: on a box with few
    // cores it takes CPU from the loops (see docs/benchmarks.md). Without
    // DEFER_TASKRUN, which SQPOLL excludes. A kernel that refuses it gets a
    // warning and a ring without it. The environment variable
    // LIBNET_URING_SQPOLL_IDLE_MS sets it where the program leaves it 0.
    uint32_t sqPollIdleMs = 0;
  };
  static void setDefaultConfig(const Config& config);
  static Config defaultConfig();

  // Whether io_uring can run here, probed once per process: ring setup with
  // SINGLE_ISSUER|DEFER_TASKRUN (fewer flags if refused), the opcodes libnet
  // needs, buffer-ring registration, and a multishot recv into a buffer ring
  // actually receiving a byte over a socketpair (kernels before 6.0 know the
  // opcodes but refuse multishot recv, which the completion path relies on).
  // The probe's ring lives on a short-lived thread of its own: after a ring
  // is closed the kernel interrupts each thread that used it once, so a
  // blocking call with SO_RCVTIMEO/SO_SNDTIMEO there fails with EINTR. The
  // same holds for a loop's ring on the loop's thread: a program that runs a
  // kIoUring loop on its main thread and then makes such calls after the
  // loop is gone should retry them on EINTR.
  struct ProbeResult {
    bool ok = false;
    unsigned setupFlags = 0;
    int error = 0;       // errno of the failure
    std::string detail;  // why it failed, or which flags it runs with
  };
  static const ProbeResult& probe();

  // The probe's stages, for simulating a kernel that fails one of them.
  enum class ProbeStage { kNone, kSetup, kOpcodes, kBufferRing, kMultishotRecv };
  // Tests only, before the first probe() of the process: the probe reports
  // `stage` as missing (ENOSYS, "(simulated)" in the detail) without asking
  // the kernel about it.
  static void simulateProbeFailure(ProbeStage stage);

  explicit UringPoller(EventLoop* loop);  // throws std::system_error
  ~UringPoller() override;

  Timestamp poll(Duration timeout, ChannelList* active) override;
  void dispatchCompletions() override;
  void updateChannel(Channel* channel) override;
  void removeChannel(Channel* channel) override;
  [[nodiscard]] std::unique_ptr<ConnectionIo> newConnectionIo(
      const ConnectionIo::Parts& parts) override;
  [[nodiscard]] std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner,
                                                          int listenFd) override;
  [[nodiscard]] size_t ownersInFlight() const override { return handlerCount_; }
  [[nodiscard]] PollerKind kind() const override { return PollerKind::kIoUring; }

  // Completion interface (loop thread only).
  [[nodiscard]] uint64_t registerHandler(Handler* handler);
  void unregisterHandler(uint64_t token);
  // An SQE to fill; submits the queue first if it is full.
  [[nodiscard]] io_uring_sqe* getSqe();
  [[nodiscard]] static uint64_t userData(Op op, uint64_t token) {
    return (static_cast<uint64_t>(op) << 56) | token;
  }
  [[nodiscard]] BufferRing& buffers() { return *buffers_; }
  // Puts `fd` in a slot of the ring's file table: the slot's index for ops
  // with IOSQE_FIXED_FILE, or -1 (no table, table full): use fd. Done by an
  // IORING_OP_FILES_UPDATE in the submission queue, not a system call of its
  // own: SQEs are issued in order, so ops prepared after this one find the
  // slot filled.
  [[nodiscard]] int registerFile(int fd);
  // Empties the slot (asynchronously, with the next submit: the socket is
  // released then); the slot is reused once that has completed.
  void unregisterFile(int index);
  // Closes `fd` through the ring (IORING_OP_CLOSE) with the next submit: no
  // close(2) of its own. The destructor submits what is still queued (or,
  // failing that, closes those fds itself). With SQPOLL, whose kernel thread
  // takes entries at its own pace, a plain close(2).
  void closeFile(UniqueFd fd);
  [[nodiscard]] uint32_t fileSlots() const { return fileSlots_; }
  // Slots holding a socket, or one being released.
  [[nodiscard]] size_t filesRegistered() const {
    return fileSlotsUsed_ - freeFileSlots_.size();
  }
  // The Buffer a message callback gets when it is handed received bytes in
  // place (UringConnectionIo): one per loop, viewing a provided buffer only
  // for the length of one callback, so a connection carries none.
  [[nodiscard]] Buffer& receivedView() { return receivedView_; }
  // Registered completion owners (connections, acceptors) right now.
  [[nodiscard]] unsigned setupFlags() const { return setupFlags_; }

 private:
  struct Slot {
    Channel* channel = nullptr;
    Handler* handler = nullptr;
    uint32_t generation = 0;
    uint32_t armedMask = 0;
    bool pollArmed = false;
    uint64_t activeTurn = 0;
  };
  struct Completion {
    uint64_t userData;
    int32_t res;
    uint32_t flags;
  };

  [[nodiscard]] uint64_t tokenOf(uint32_t slot) const {
    return (static_cast<uint64_t>(slots_[slot].generation) << 32) | slot;
  }
  uint32_t allocateSlot();
  void freeSlot(uint32_t slot);
  void armPoll(uint32_t slot);
  void cancelPoll(uint32_t slot);
  // Returns the slot a completion belongs to, or -1 if it is stale.
  [[nodiscard]] int64_t liveSlot(uint64_t userData) const;
  void dropStale(const Completion& c);
  // After a submit: once the queue is empty, the closes it carried are the
  // kernel's.
  void submitted() {
    if (!closesUnsubmitted_.empty() && io_uring_sq_ready(&ring_) == 0) closesUnsubmitted_.clear();
  }
  // Config::sqPollIdleMs, or the environment's where that is 0.
  static uint32_t sqPollIdleMs(const Config& config);
  // Config::fixedFiles, or the environment's where that is the default.
  static uint32_t fixedFiles(const Config& config);

  io_uring ring_{};
  unsigned setupFlags_ = 0;
  uint32_t fileSlots_ = 0;          // size of the registered-file table
  uint32_t fileSlotsUsed_ = 0;      // slots ever handed out: [0, used)
  std::vector<uint32_t> freeFileSlots_;
  // The fd each slot was last given, where its FILES_UPDATE reads it from
  // (sized once: an SQE not yet submitted points into it).
  std::unique_ptr<int[]> fileSlotFds_;
  std::vector<int> closesUnsubmitted_;  // closeFile() fds not yet submitted
  bool fileTableFullLogged_ = false;
  static constexpr Duration kRingCheckInterval = std::chrono::seconds(1);
  Timestamp lastRingCheck_;
  std::unique_ptr<BufferRing> buffers_;
  Buffer receivedView_{0};  // after buffers_: destroyed first
  std::vector<Slot> slots_;
  std::vector<uint32_t> freeSlots_;
  std::vector<Completion> completions_;
  std::vector<uint32_t> rearm_;
  uint64_t turn_ = 0;
  size_t handlerCount_ = 0;
};

}  // namespace libnet
