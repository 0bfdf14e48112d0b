// One io_uring echo loop: the io_uring counterpart of EpollEchoLoop and the
// floor for libnet's io_uring poller. Multishot accept, multishot recv from a
// provided-buffer ring, registered files, one send in flight per connection, one
// io_uring_submit_and_wait per turn. Owns its ring, buffer ring and
// connections; borrows the listener and the termination signalfd. Must be
// constructed and run on the same thread (the ring is SINGLE_ISSUER).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pingpong/floor/BufferRing.h"
#include "pingpong/floor/IoUring.h"

namespace pingpong {

class UringEchoLoop {
 public:
  // Throws std::system_error if the ring or the buffer ring cannot be set up.
  UringEchoLoop(int listenFd, int signalFd);
  UringEchoLoop(const UringEchoLoop&) = delete;
  UringEchoLoop& operator=(const UringEchoLoop&) = delete;
  ~UringEchoLoop();

  // Serves until the signalfd becomes readable.
  void run();

 private:
  enum class Op : uint8_t { kAccept = 1, kRecv, kSend, kCancel, kSignal };

  // Slots are reused; a completion names its slot by index and generation so
  // that a late completion for a previous occupant is recognised, and no
  // pointer to anything that can die ever sits in the kernel.
  struct Connection {
    int fd = -1;
    bool fixed = false;  // fd sits in the ring's file table at slot = index
    uint32_t generation = 0;
    bool recvArmed = false;
    bool sendInFlight = false;
    bool closing = false;
    bool readPaused = false;  // recv cancelled until the send queue drains
    std::string sending;      // bytes of the send in flight; stable until it completes
    int keptBuffer = -1;      // or the provided buffer they are in (then not `sending`)
    size_t keptLength = 0;
    size_t sendOffset = 0;
    std::string queued;  // bytes received while a send was in flight
  };

  static uint64_t encode(Op op, uint32_t index, uint32_t generation);
  // Points an SQE at the connection's socket: its table slot if it has one.
  static void target(io_uring_sqe* sqe, const Connection& conn, uint32_t index);
  Connection* lookup(uint64_t userData);

  void handleCompletion(const io_uring_cqe& cqe);
  void onAccept(const io_uring_cqe& cqe);
  void onRecv(const io_uring_cqe& cqe);
  void onSend(const io_uring_cqe& cqe);

  void drain();
  io_uring_sqe* newSqe(uint64_t userData);
  void armAccept();
  void armSignal();
  void armRecv(uint32_t index);
  void submitSend(uint32_t index);
  // Echoes `n` bytes of provided buffer `bufferId`; true if the buffer was
  // kept for the send (handed back when it completes), false if copied.
  bool echo(uint32_t index, unsigned bufferId, size_t n);
  [[nodiscard]] std::string_view sendBytes(const Connection& conn) const;
  void giveBackKept(Connection& conn);
  void startClose(uint32_t index);
  void finishCloseIfIdle(uint32_t index);

  uint32_t fileSlots_ = 0;  // registered-file table size (0: none)
  int listenFd_;
  int signalFd_;
  bool stop_ = false;
  bool acceptArmed_ = false;
  bool acceptStarved_ = false;  // out of fds; re-armed when a connection closes
  // Requests submitted whose final completion (no IORING_CQE_F_MORE) has not
  // been seen; drain() waits for zero.
  int inFlight_ = 0;
  // Declared in this order so that the buffer ring is unregistered before the
  // ring is torn down.
  IoUring ring_;
  BufferRing buffers_;
  // unique_ptr keeps each Connection (and the send buffer the kernel reads)
  // at a fixed address while the table grows.
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<uint32_t> freeSlots_;
};

}  // namespace pingpong
