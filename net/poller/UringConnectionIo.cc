#include "net/poller/UringConnectionIo.h"

#include <liburing.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdint>

#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/EventLoopBase.h"
#include "net/LoopInternals.h"
#include "net/OutputQueue.h"
#include "net/poller/BufferRing.h"
#include "net/poller/SendFile.h"
#include "net/poller/UringContext.h"

namespace libnet {

namespace {

// Without the kernel's total limit on a multishot recv: below this much
// room under the output limit a connection receives single-shot (one
// provided buffer, at most the room, per receive), so that nothing is read
// past the limit. Above it a plain multishot recv, which drains what the
// socket holds in one pass (seen taking 1.5 MiB in one loop turn).
constexpr size_t kSingleShotRoom = 512 * 1024;

// A loop turn that took this much from a socket that still holds more makes
// its connection backlogged (armRecv): the size of one epoll read (into the
// loop's scratch buffer).
constexpr size_t kBackloggedPass = 64 * 1024;

// A turn-end send put off while the socket holds more input (onTurnEnd)
// waits until this much has come in the turns it waited: a reply to a
// request up to one epoll read leaves whole, as it does on epoll, and a
// larger one in parts of at least that, which the peer acknowledges at once
// (more than a full segment), so Nagle's algorithm holds no part back.
constexpr size_t kPutOffInput = kBackloggedPass;

// recvLimit_ of a multishot recv without a total.
constexpr size_t kUnlimited = SIZE_MAX;

}  // namespace

UringConnectionIo::UringConnectionIo(UringContext* context, EventLoopBase* loop, const Parts& parts)
    : context_(context),
      loop_(loop),
      owner_(parts.owner),
      fd_(parts.fd),
      output_(&LoopInternals::bufferPool(*loop)) {}

UringConnectionIo::~UringConnectionIo() {
  // An op in flight holds the owner, and so this, alive: only a connection
  // that was never released can get here registered.
  if (token_ != 0) {
    LOG_ERROR << "io_uring connection strategy destroyed without release (fd=" << fd_ << ")";
    context_->unregisterHandler(token_);
  }
}

void UringConnectionIo::start() {
  token_ = context_->registerHandler(this);
  fixed_ = context_->registerFile(fd_);
  armRecv();
}

void UringConnectionIo::target(io_uring_sqe* sqe) const {
  if (fixed_ < 0) return;
  sqe->fd = fixed_;
  sqe->flags |= IOSQE_FIXED_FILE;
}

void UringConnectionIo::pauseRead() {
  // Data received before the cancel lands is kept in the input buffer.
  cancelRecv();
}

int UringConnectionIo::write(std::string_view data) {
  output_.append(data);
  // Behind a file the bytes wait for it: its sendfile(2) runs from the loop
  // (flush) or from its POLLOUT completion, never inside the caller's send.
  if (!output_.hasFile()) pumpAtTurnEnd();
  return 0;
}

int UringConnectionIo::write(Buffer* buffer, InputKind kind) {
  if (kind == InputKind::kTransient) {
    // Storage its owner keeps (a ring view the ring cannot spare): copied.
    const int err = write(buffer->view());
    buffer->retrieveAll();
    return err;
  }
  // With nothing queued the caller's buffer itself goes to the kernel (no
  // copy); a buffer of the application's own gets spare storage back so that
  // it does not grow anew for every message (not a view it was lent, say
  // another connection's received bytes: that holds no storage to replace).
  output_.append(buffer, kind == InputKind::kApplication && !buffer->borrowed());
  if (!output_.hasFile()) pumpAtTurnEnd();
  return 0;
}

void UringConnectionIo::pumpAtTurnEnd() {
  // Whatever this turn queues leaves in one send, at the end of the turn
  // (the SQE would not go out before then anyway). Sending each piece as it
  // comes, one send in flight at a time, made a reply received in two
  // completions (a message across two provided buffers) leave as two
  // sends: the second, small and behind unacknowledged bytes, waited for
  // the peer's delayed ACK under Nagle's algorithm, 40 ms a round trip
  // (docs/benchmarks.md, "Request/response round trips").
  if (turnEnd_ != TurnEnd::kNone || writer_ != Writer::kIdle || closed()) return;
  if (token_ == 0) {  // not started, or released: no turn end will call
    pump();
    return;
  }
  turnEnd_ = TurnEnd::kThisTurn;
  context_->atTurnEnd(token_);
}

void UringConnectionIo::onTurnEnd() {
  const std::shared_ptr<void> guard = owner_->keepAlive();
  // The input of the turns this send has waited for, this one's included.
  const size_t turnInput = recvTurn_ == context_->turn() ? turnBytes_ : 0;
  putOffInput_ = (turnEnd_ == TurnEnd::kNextTurn ? putOffInput_ : 0) + turnInput;
  if (inputFollows_ && recvInFlight() && owner_->wantsInput() && putOffInput_ < kPutOffInput) {
    // The last receive left bytes in the socket, which the recv armed hands
    // over at the loop's next io_uring_enter: often the rest of the message
    // this turn answered. One more turn, without a wait, and another for as
    // long as each ends so, lets the reply leave whole. Not one turn only:
    // while the socket holds more, a multishot recv takes at most 33
    // receives per kernel pass and the rest at the next enter
    // (MULTISHOT_MAX_RETRY, counted across passes and reset only when
    // reached), so a request of 40 provided buffers that the cap met near its
    // start came in three turns, and its reply, sent after the second, left
    // in two sends: the second waited under Nagle's algorithm for the peer's
    // delayed ACK (RoundTripTest). At most kPutOffInput: a peer that keeps
    // the socket full still gets its replies, in parts of that size at least.
    turnEnd_ = TurnEnd::kNextTurn;
    context_->atNextTurnEnd(token_);
    return;
  }
  turnEnd_ = TurnEnd::kNone;
  pump();
}

bool UringConnectionIo::shutdownAfterOutput() {
  if (closed()) return false;
  finAfterOutput_ = true;  // the send completion that empties the queue sends it
  return true;
}

void UringConnectionIo::finIfDrained() {
  if (!finAfterOutput_ || !output_.empty()) return;
  finAfterOutput_ = false;
  // On the connection's own fd (the registered slot is only for ops): the
  // close that follows through the ring goes out with the next submission,
  // after the rest of this loop turn.
  if (::shutdown(fd_, SHUT_WR) < 0) {
    LOG_DEBUG << "shutdown(SHUT_WR) fd=" << fd_ << ": " << strerrorTl(errno);
  }
}

void UringConnectionIo::close() {
  // Bytes queued for the send put off to the turn end go out ahead of the
  // close, as they would have if sent at once (and do on epoll, which writes
  // inside send()): a reply followed by a forced close still leaves if the
  // socket takes it (the send is submitted ahead of the cancels below).
  if (turnEnd_ != TurnEnd::kNone && !closed() && writer_ == Writer::kIdle &&
      output_.inFlight().readableBytes() == 0 && output_.startSend()) {
    submitSend();
  }
  if (!closed()) life_ = Life::kClosed;
  // Each op in flight is cancelled by its user_data, which the kernel finds
  // in a hash table; cancelling by fd walks every pending request of the
  // ring, and with 1000 connections open that walk took a large share of
  // the server's CPU on short connections (docs/benchmarks.md, "Short
  // connections: a new connection per request (2026-11-25)", "What changed").
  cancelRecv();
  if (writer_ == Writer::kSending) cancel(UringOp::kSend);
  if (writer_ == Writer::kWaitingWritable) cancel(UringOp::kWritable);
  output_.clear();  // closes queued files; a send in flight keeps its bytes
}

void UringConnectionIo::cancel(UringOp op) {
  io_uring_sqe* sqe = context_->getSqe();
  io_uring_prep_cancel64(sqe, completionUserData(op, token_), 0);
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kIgnore, 0));
}

void UringConnectionIo::release() {
  life_ = Life::kReleased;
  // The slot and the fd go now, in the same submission as the cancels that
  // close() queued (and after them): an op still in flight holds the socket
  // in the kernel until it completes, so the peer sees the close only then,
  // and its completion still comes to this handler. Waiting for those
  // completions before closing cost a short connection one more loop turn.
  if (fixed_ >= 0) {
    // Before the fd's own close: the table's reference would otherwise keep
    // the socket open.
    context_->unregisterFile(fixed_);
    fixed_ = -1;
  }
  context_->closeFile(owner_->onReleased());
  releaseIfIdle();  // or when the last op in flight completes
}

void UringConnectionIo::opStarted() {
  // Before the op's state is set: the first op takes the reference.
  if (opsInFlight() == 0) keepAlive_ = owner_->keepAlive();
}

void UringConnectionIo::opFinished() {
  // After the op's state is cleared. Called from onCompletion(), whose own
  // reference keeps the owner (and this) alive past the reset below.
  if (opsInFlight() == 0) {
    keepAlive_.reset();
    releaseIfIdle();
  }
}

void UringConnectionIo::releaseIfIdle() {
  if (life_ != Life::kReleased || opsInFlight() > 0) return;
  if (token_ != 0) {
    context_->unregisterHandler(token_);
    token_ = 0;
  }
  // Nothing will be sent any more: received bytes queued in place go back
  // to the ring now, while it exists (the connection may outlive the loop).
  output_.releaseViews();
  // And the storage of the last send, whose completion is in: to the loop's
  // pool, for the next connection's reply, rather than freed with this
  // connection (a short connection closes before its send completes).
  output_.recycle();
}

void UringConnectionIo::armRecv() {
  if (recvInFlight() || closed() || !owner_->wantsInput()) return;
  // A multishot recv drains what the socket holds in one kernel pass, before
  // the connection has seen a byte of it and could pause, and every byte of
  // the pass sits in the loop's provided buffers at once (which grow to hold
  // it, and stay resident). So where the kernel takes a total, the recv is
  // told how much it may deliver before it ends:
  //  - the room left under the connection's output limit (an echo that
  //    takes all of it has paused itself, with nothing read beyond);
  //  - while the connection is backlogged (a turn took kBackloggedPass and
  //    the socket held more, or a receive found the ring empty), its
  //    share of one turn's buffers (UringContext::backloggedShare, 32–64 KiB):
  //    the rest waits in the socket, as it does on epoll.
  // The next arming asks again. The kernel counts whole receives against
  // the total, so each receive is capped too when the total is less than a
  // buffer. A peer that waits for answers soon stops counting as backlogged
  // (noteReceived) and gets its room (64 MiB by default): request-response
  // traffic keeps one multishot recv, re-armed once per room. Without the
  // total (older kernels), a connection near its limit receives single-shot,
  // at most the room at a time; the rest is as before.
  const size_t room = owner_->inputRoom();
  if (room == 0) {
    recv_ = Recv::kWaitingForRoom;  // onSend() asks again once output has moved
    return;
  }
  const uint32_t bufferSize = context_->buffers().bufferSize();
  size_t limit = room;
  if (backlogged_) limit = std::min(limit, context_->backloggedShare());
  io_uring_sqe* sqe = context_->getSqe();
  if (context_->boundedMultishotRecv() && limit <= UINT32_MAX) {
    io_uring_prep_recv_multishot(sqe, fd_, nullptr,
                                 static_cast<unsigned>(limit < bufferSize ? limit : 0), 0);
    sqe->file_index = static_cast<uint32_t>(limit);  // the total: optlen in newer headers
    recvLimit_ = limit;
  } else if (!context_->boundedMultishotRecv() && room < kSingleShotRoom) {
    io_uring_prep_recv(sqe, fd_, nullptr, static_cast<unsigned>(std::min<size_t>(room, bufferSize)),
                       0);
    recvLimit_ = room;
  } else {
    io_uring_prep_recv_multishot(sqe, fd_, nullptr, 0, 0);
    recvLimit_ = kUnlimited;
  }
  armBytes_ = 0;
  armTurnMax_ = 0;
  target(sqe);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = context_->buffers().groupId();
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kRecv, token_));
  opStarted();
  recv_ = Recv::kArmed;
}

void UringConnectionIo::cancelRecv() {
  if (recv_ != Recv::kArmed) return;
  cancel(UringOp::kRecv);
  recv_ = Recv::kCancelling;
}

void UringConnectionIo::noteReceived(int32_t res, uint32_t flags) {
  const uint64_t turn = context_->turn();
  if (turn != recvTurn_) {
    recvTurn_ = turn;
    turnBytes_ = 0;
  }
  if (res <= 0) return;
  turnBytes_ += static_cast<size_t>(res);
  armBytes_ += static_cast<size_t>(res);
  armTurnMax_ = std::max(armTurnMax_, turnBytes_);
  if ((flags & IORING_CQE_F_SOCK_NONEMPTY) && turnBytes_ >= kBackloggedPass) {
    backlogged_ = true;
  } else if (backlogged_ && !(flags & IORING_CQE_F_MORE) && armBytes_ >= recvLimit_ &&
             armTurnMax_ <= recvLimit_ / 2) {
    // A capped arming took all it was given over several turns, none more
    // than half of it: a peer that sends as it is answered, or one the loop
    // keeps up with. Whether the socket is left empty says little (the
    // limit mostly cuts a message short), and asking for it kept most peers
    // of request-response traffic backlogged for good.
    backlogged_ = false;
  }
}

void UringConnectionIo::submitSend() {
  Buffer& bytes = output_.inFlight();
  io_uring_sqe* sqe = context_->getSqe();
  io_uring_prep_send(sqe, fd_, bytes.peek(), bytes.readableBytes(),
                     MSG_NOSIGNAL | (output_.hasFile() ? MSG_MORE : 0));
  target(sqe);
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kSend, token_));
  opStarted();
  writer_ = Writer::kSending;
}

void UringConnectionIo::armWritable() {
  io_uring_sqe* sqe = context_->getSqe();
  io_uring_prep_poll_add(sqe, fd_, POLLOUT);
  target(sqe);
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kWritable, token_));
  opStarted();
  writer_ = Writer::kWaitingWritable;
}

void UringConnectionIo::onCompletion(UringOp op, int32_t res, uint32_t flags) {
  const std::shared_ptr<void> guard = owner_->keepAlive();
  if (op == UringOp::kRecv) {
    onRecv(res, flags);
  } else if (op == UringOp::kSend) {
    onSend(res);
  } else if (op == UringOp::kWritable) {
    onWritable(res);
  }
}

void UringConnectionIo::onRecv(int32_t res, uint32_t flags) {
  const bool more = flags & IORING_CQE_F_MORE;
  noteReceived(res, flags);
  inputFollows_ = more && (flags & IORING_CQE_F_SOCK_NONEMPTY);
  if (!more) {
    recv_ = Recv::kIdle;
    opFinished();
  }
  if (flags & IORING_CQE_F_BUFFER) handUp(res, flags);
  if (closed()) return;
  if (more && recv_ == Recv::kArmed &&
      (context_->boundedMultishotRecv()
           ? backlogged_ && recvLimit_ > UringContext::kBackloggedShareMax
           : recvLimit_ == kUnlimited && owner_->inputRoom() < kSingleShotRoom)) {
    // The recv armed may take more than armRecv() would give it now (the
    // connection turned out backlogged; without totals, it is near its output
    // limit): stop it before its next pass. The cancellation's completion
    // arms again.
    cancelRecv();
  }
  if (res > 0) {
    if (!more) {
      // The kernel ended the multishot: its total reached (a backlogged
      // share, mostly), or e.g. a CQ overflow. What it left in the socket
      // the new arming hands over at the next io_uring_enter, as a
      // continuing recv would: the turn-end send waits for it all the same.
      armRecv();
      inputFollows_ = (flags & IORING_CQE_F_SOCK_NONEMPTY) && recv_ == Recv::kArmed;
    }
    return;
  }
  if (res == 0) {
    owner_->onPeerClosed();
    return;
  }
  onRecvError(-res);
}

void UringConnectionIo::handUp(int32_t res, uint32_t flags) {
  BufferRing& ring = context_->buffers();
  const BufferRing::Received r = ring.received(flags, res);
  if (res <= 0 || closed()) {
    ring.finished(r.id);
    return;
  }
  // The bytes go up where the kernel put them: no copy. What the owner keeps
  // it copies; what it sends straight back (an echo) goes out from here too,
  // and the buffer returns to the ring when that send is done (else now).
  // With half the ring lent out already (sends stuck behind peers that do
  // not read), a send copies instead (kTransient).
  const bool lendable = ring.canLend();
  Buffer& view = context_->receivedView();
  ring.lend(&view, r);
  owner_->onInput(&view, lendable ? InputKind::kRingView : InputKind::kTransient,
                  loop_->pollReturnTime());
  assert(!view.borrowed());  // the owner hands the view back, always
}

void UringConnectionIo::onRecvError(int err) {
  switch (err) {
    case ENOBUFS:
      // The ring ran dry; the data is still in the socket, and the recv
      // goes again (backlogged) with the next submission. More buffers only
      // for a connection that got none this turn: one that did has had its
      // share, and the rest of its bytes wait in the socket. Growing for
      // every such receive took the ring to its full 32 MiB within 200 ms
      // of a flood by 40 peers (docs/benchmarks.md, "Peers that send and
      // never read (2026-11-27)").
      if (turnBytes_ == 0) context_->growBuffers();
      backlogged_ = true;
      armRecv();
      return;
    case EINTR:
    case EAGAIN:
      armRecv();
      return;
    case ECANCELED:
      // pauseRead() cancelled it (or onRecv(), to arm it for less). If
      // reading was turned back on before the cancel landed, the re-arm then
      // found this recv still armed and did nothing: arm now (a no-op while
      // still paused).
      armRecv();
      return;
    default:
      owner_->onIoError("recv", err);
  }
}

void UringConnectionIo::onSend(int32_t res) {
  writer_ = Writer::kIdle;
  opFinished();
  if (closed()) return;
  if (res < 0) {
    if (res == -EINTR || res == -EAGAIN) {
      submitSend();
      return;
    }
    owner_->onIoError("send", -res);
    return;
  }
  output_.sent(static_cast<size_t>(res));
  // The last byte of a connection closing after its output is written: the
  // FIN now, not at the turn end (pump) nor with the close after it.
  finIfDrained();
  owner_->onOutputProgress();
  if (recv_ == Recv::kWaitingForRoom) armRecv();
  // The rest of a short send first, in order, with whatever else this turn
  // queues behind it.
  pumpAtTurnEnd();
}

void UringConnectionIo::onWritable(int32_t res) {
  writer_ = Writer::kIdle;
  opFinished();
  if (closed() || res == -ECANCELED) return;
  // POLLERR / POLLHUP come back as events too: sendfile then reports them.
  pump();
}

void UringConnectionIo::pump() {
  if (writer_ != Writer::kIdle || closed()) return;
  if (output_.inFlight().readableBytes() > 0) {
    submitSend();
    return;
  }
  // Sent: the storage can serve another connection (the waiting bytes move
  // into the in-flight buffer in their own storage).
  output_.reclaim();
  for (;;) {
    if (output_.startSend()) {
      submitSend();
      return;
    }
    if (!output_.hasFile()) {
      finIfDrained();  // a file sent last
      owner_->onOutputDrained();
      return;
    }
    bool progressed = false;
    const FileSendResult file = sendQueuedFile(&output_, fd_, &progressed);
    if (progressed) owner_->onOutputProgress();
    switch (file.status) {
      case FileSendResult::kDone:
        continue;
      case FileSendResult::kBlocked:
        armWritable();
        return;
      case FileSendResult::kFailed:
        owner_->onIoError(file.call, file.error);
        return;
    }
  }
}

}  // namespace libnet
