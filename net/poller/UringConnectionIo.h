// UringConnectionIo: a connection's I/O on an io_uring loop, on completions
// instead of readiness: no read/write/send/recv system calls.
//
// Reads: one multishot recv into the loop's provided-buffer ring, told how
// much it may deliver in all (a kernel that cannot be told: see armRecv):
// the bytes the connection takes before its output limit pauses it
// (Owner::inputRoom()), and, while the peer sends faster than the loop
// takes (backlogged), its share of one turn's buffers. The owner gets the
// bytes where the kernel put them (a Buffer viewing the provided buffer): no
// copy, and what it sends straight back (an echo) goes out from there too,
// the buffer returning to the ring once that send completes (with half the
// ring lent out already, such a send copies instead).
// Writes: at most one send in flight (several in flight on one socket may
// reorder); its bytes sit still in the OutputQueue's in-flight buffer until
// it completes, while later bytes queue behind. A send is prepared at the
// end of the loop turn, so that all a turn queued leaves in one send. Files: sendfile(2) on the
// non-blocking socket (io_uring has no sendfile op, and reading the file
// into a buffer to send it costs a user-space copy of every byte, which
// dominated the profile: docs/benchmarks.md, "Figures formerly quoted in
// code comments"), with a one-shot POLLOUT op while the socket is full.
//
// Closing after output (shutdownAfterOutput): once the completion of the
// send that empties the queue comes in, shutdown(SHUT_WR) on the socket's
// real fd at once, in that completion's handling, so that the FIN leaves
// right behind the answer instead of with the close, which waits for the
// turn end and the ring's next submission (ab and other clients that read
// to end of file wait for the FIN: docs/benchmarks.md). A plain system call,
// not an IORING_OP_SHUTDOWN linked behind the send: the kernel always ran
// that op on the ring's io-wq worker thread, a wake-up and a CQE more per
// connection on the loop's CPU (docs/benchmarks.md, "io_uring: the FIN
// without a linked op").
//
// Every op in flight keeps the connection alive (Owner::keepAlive); closing
// cancels them (each by its user_data), and release() empties the socket's
// file-table slot and closes its fd, through the ring in the same submission
// as those cancels (with SQPOLL, whose kernel thread submits at its own
// pace, by close(2) at once): the kernel holds the socket for the ops still
// in flight, whose completions still come here; the handler is unregistered
// when the last one has.
//
// State: four small enums and two facts about the peer, where there were
// eleven booleans and a count of ops in flight. Each enum holds one thing
// that is in one state at a time, so combinations that cannot happen cannot
// be written (released but open, a send and a POLLOUT wait both in flight,
// a recv cancelled but not armed, waiting for room while armed, put off to
// the next turn end without being asked for this one's):
//  - life_: open; closed (no new I/O, ops may still be in flight); released
//    (the fd handed back; unregisters once nothing is in flight);
//  - recv_: not armed; not armed for want of input room (a send completing
//    arms it); armed; or armed and being cancelled (a cancel goes once);
//  - writer_: one writer at a time: idle, a send in flight, or a file
//    waiting for POLLOUT (either moves the queue on when it completes);
//  - turnEnd_: whether the queue is to move at this turn's end, or was put
//    off to the next one's (onTurnEnd());
//  - inputFollows_: the last receive left bytes in the socket, which the
//    recv armed hands over at the next io_uring_enter (the turn-end send
//    waits for them, turn by turn, up to 64 KiB of input: onTurnEnd());
//  - backlogged_: the peer sends faster than one turn's share (below);
//  - finAfterOutput_: the connection closes after its output, and the
//    send completion that leaves the queue empty shuts the write side.
// The ops in flight (at most a recv and a writer) are counted from recv_ and
// writer_, not kept apart: the count decides when the owner's reference
// (keepAlive_) is taken and dropped, and when a released strategy
// unregisters.
//
// Owned by its TcpConnection (under TLS, by its TlsConnectionIo); made on the
// thread that creates the connection, loop thread only from start() on.
#pragma once

#include <cstdint>
#include <memory>

#include "net/ConnectionIo.h"
#include "net/OutputQueue.h"
#include "net/poller/CompletionHandler.h"

struct io_uring_sqe;

namespace libnet {

class EventLoopBase;
class UringContext;

class UringConnectionIo final : public ConnectionIo, private CompletionHandler {
 public:
  UringConnectionIo(UringContext* context, EventLoopBase* loop, const Parts& parts);
  ~UringConnectionIo() override;

  void start() override;
  void pauseRead() override;
  void resumeRead() override { armRecv(); }
  [[nodiscard]] int write(std::string_view data) override;
  [[nodiscard]] int write(Buffer* buffer, InputKind kind) override;
  void queueFile(UniqueFd file, off_t offset, size_t length, Buffer* head) override {
    output_.appendFile(std::move(file), offset, length, head);
  }
  void flush() override { pump(); }
  [[nodiscard]] size_t bufferedOutput() const override { return output_.bufferedBytes(); }
  [[nodiscard]] size_t queuedOutput() const override { return output_.queuedBytes(); }
  [[nodiscard]] bool outputDrained() const override { return output_.empty(); }
  [[nodiscard]] size_t outputCapacity() const override { return output_.capacity(); }
  [[nodiscard]] bool shutdownAfterOutput() override;
  void close() override;
  void release() override;

 private:
  void onCompletion(UringOp op, int32_t res, uint32_t flags) override;
  void onTurnEnd() override;
  void onRecv(int32_t res, uint32_t flags);
  // A receive's provided buffer: lent to the owner as a view, or given back.
  void handUp(int32_t res, uint32_t flags);
  void onRecvError(int err);
  void onSend(int32_t res);
  void onWritable(int32_t res);
  // With finAfterOutput_ and the queue empty: shutdown(SHUT_WR), once.
  void finIfDrained();
  // Moves queued output along: the in-flight buffer, the waiting bytes,
  // files. One writer at a time: a send in flight or a file waiting for
  // POLLOUT resumes it when it completes.
  void pump();
  // pump() at the end of this loop turn (UringContext::atTurnEnd).
  void pumpAtTurnEnd();
  void armRecv();
  // Cancels the recv armed, once.
  void cancelRecv();
  // Per receive completion: the bytes of this loop turn, and whether the
  // socket is backlogged.
  void noteReceived(int32_t res, uint32_t flags);
  void submitSend();
  void armWritable();
  // Cancels this connection's op `op` in flight (found by its user_data).
  void cancel(UringOp op);
  // The socket in an SQE: its registered-file slot where it has one.
  void target(io_uring_sqe* sqe) const;

  enum class Life : uint8_t { kOpen, kClosed, kReleased };
  enum class Recv : uint8_t { kIdle, kWaitingForRoom, kArmed, kCancelling };
  enum class Writer : uint8_t { kIdle, kSending, kWaitingWritable };
  enum class TurnEnd : uint8_t { kNone, kThisTurn, kNextTurn };

  [[nodiscard]] bool closed() const { return life_ != Life::kOpen; }
  [[nodiscard]] bool recvInFlight() const {
    return recv_ == Recv::kArmed || recv_ == Recv::kCancelling;
  }
  [[nodiscard]] int opsInFlight() const {
    return (recvInFlight() ? 1 : 0) + (writer_ != Writer::kIdle ? 1 : 0);
  }
  // Around each op: opStarted() before its state is set (the first op in
  // flight takes the owner's reference), opFinished() after it is cleared
  // (the last drops it, and a released strategy unregisters).
  void opStarted();
  void opFinished();
  void releaseIfIdle();

  UringContext* context_;
  EventLoopBase* loop_;
  Owner* owner_;
  int fd_;
  int fixed_ = -1;  // slot in the ring's file table, or -1: use fd_
  OutputQueue output_;
  uint64_t token_ = 0;  // registered: start() until released with no op in flight
  Life life_ = Life::kOpen;
  Recv recv_ = Recv::kIdle;
  Writer writer_ = Writer::kIdle;
  TurnEnd turnEnd_ = TurnEnd::kNone;
  bool inputFollows_ = false;  // the last receive left bytes in the socket, a recv is armed
  // The peer sends faster than one turn's share (armRecv, noteReceived). A
  // new connection does not start so: capped from its first arming, a
  // request larger than the share (40 KB) arrived in two turns, its echo
  // left as two sends, and the second waited under Nagle for the client's
  // delayed ACK, 40 ms a round trip (bench/roundtrip). A flood is caught by
  // its first pass instead (kBackloggedPass with bytes left in the socket).
  bool backlogged_ = false;
  bool finAfterOutput_ = false;      // shutdownAfterOutput(): the FIN once the queue is empty
  size_t recvLimit_ = 0;             // what the recv armed may deliver in all
  size_t armBytes_ = 0;              // received since the recv was armed
  size_t armTurnMax_ = 0;            // ... the most of it in one loop turn
  uint64_t recvTurn_ = 0;            // the loop turn turnBytes_ counts
  size_t turnBytes_ = 0;             // received in that turn
  size_t putOffInput_ = 0;           // received in the turns the send waited (onTurnEnd)
  std::shared_ptr<void> keepAlive_;  // the owner, while ops are in flight
};

}  // namespace libnet
