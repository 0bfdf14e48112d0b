#include "net/TcpConnection.h"

#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>

#include "base/Logging.h"
#include "net/BufferPool.h"
#include "net/EventLoop.h"
#include "net/poller/UringPoller.h"

namespace libnet {

void defaultConnectionCallback(const TcpConnectionPtr& conn) {
  LOG_TRACE << conn->localAddress().toIpPort() << " -> " << conn->peerAddress().toIpPort() << " is "
            << (conn->connected() ? "UP" : "DOWN");
}

void defaultMessageCallback(const TcpConnectionPtr&, Buffer* buffer, Timestamp) {
  buffer->retrieveAll();
}

TcpConnection::TcpConnection(EventLoop* loop, std::string name, UniqueFd sockfd,
                             const InetAddress& localAddr, const InetAddress& peerAddr)
    : loop_(loop),
      name_(std::move(name)),
      socket_(std::move(sockfd)),
      channel_(loop, socket_.fd()),
      localAddr_(localAddr),
      peerAddr_(peerAddr),
      connectionCallback_(defaultConnectionCallback),
      messageCallback_(defaultMessageCallback),
      uring_(loop->uring()) {
  channel_.setReadCallback([this](Timestamp t) {
    // A FIN that was already queued when the poller reported the edge brings
    // no new edge: with EPOLLRDHUP set, read on past a short read to see it.
    handleRead(t, (channel_.returnedEvents() & EPOLLRDHUP) == 0);
  });
  channel_.setWriteCallback([this] { handleWrite(); });
  channel_.setCloseCallback([this] { handleClose(); });
  channel_.setErrorCallback([this] { handleError(); });
  LOG_DEBUG << "TcpConnection " << name_ << " fd=" << socket_.fd() << " created";
}

TcpConnection::~TcpConnection() {
  if (uringToken_ != 0) {
    LOG_ERROR << "TcpConnection " << name_ << " destroyed without connectDestroyed()";
  }
  LOG_DEBUG << "TcpConnection " << name_ << " fd=" << socket_.fd() << " destroyed in state "
            << stateName(state_.load());
}

void TcpConnection::send(std::string_view message) {
  const State state = state_.load();
  if (state != State::kConnected && state != State::kDisconnecting) return;
  if (loop_->isInLoopThread()) {
    sendInLoop(message);
  } else {
    send(std::string(message));
  }
}

void TcpConnection::send(std::string&& message) {
  const State state = state_.load();
  if (state != State::kConnected && state != State::kDisconnecting) return;
  if (loop_->isInLoopThread()) {
    sendInLoop(message);
  } else {
    loop_->queueInLoop(
        [self = shared_from_this(), message = std::move(message)] { self->sendInLoop(message); });
  }
}

void TcpConnection::send(Buffer* buffer) {
  if (uring_ && loop_->isInLoopThread() && !sendInFlight_ && sendingBuffer_.readableBytes() == 0 &&
      pendingFiles_.empty() && buffer->readableBytes() > 0 &&
      buffer->readableBytes() < highWaterMark_ && state_.load() != State::kDisconnected &&
      !closeWhenDrained_) {
    // Nothing in flight: hand the caller's buffer itself to the kernel (the
    // caller gets our empty one back) instead of copying the bytes. A
    // buffer of the caller's own (not our input) gets spare storage back,
    // so that it does not grow anew for every message.
    sendingBuffer_.swap(*buffer);
    if (buffer != &inputBuffer_) loop_->bufferPool().lend(buffer);
    submitSend();
    checkOutputLimit();
    return;
  }
  if (loop_->isInLoopThread()) {
    const State state = state_.load();
    if (state == State::kConnected || state == State::kDisconnecting) sendInLoop(buffer->view());
    buffer->retrieveAll();
  } else {
    send(buffer->retrieveAllAsString());
  }
}

void TcpConnection::sendInLoop(std::string_view data) {
  loop_->assertInLoopThread();
  if (state_.load() == State::kDisconnected || closeWhenDrained_) {
    // Routine when the peer has just gone (a send queued from another thread
    // meets the close), so not worth a warning.
    LOG_DEBUG << name_ << ": disconnected, dropping " << data.size() << " bytes";
    return;
  }
  if (uring_) {
    const size_t queued = outputBuffer_.readableBytes() + sendingBuffer_.readableBytes();
    if (queued + data.size() >= highWaterMark_ && queued < highWaterMark_ &&
        highWaterMarkCallback_) {
      loop_->queueInLoop([self = shared_from_this(), size = queued + data.size()] {
        self->highWaterMarkCallback_(self, size);
      });
    }
    if (!pendingFiles_.empty()) {  // behind a file: wait for it
      pendingFiles_.back().after.append(data);
    } else if (sendInFlight_) {
      loop_->bufferPool().lend(&outputBuffer_);
      outputBuffer_.append(data);
    } else {
      loop_->bufferPool().lend(&sendingBuffer_);
      sendingBuffer_.append(data);
      submitSend();
    }
    checkOutputLimit();
    return;
  }
  if (!pendingFiles_.empty()) {  // behind a file: wait for it
    pendingFiles_.back().after.append(data);
    checkOutputLimit();
    return;
  }
  size_t written = 0;
  // Write directly only if nothing is queued, or the bytes would reorder.
  if (outputBuffer_.readableBytes() == 0 && !data.empty()) {
    ssize_t n;
    do {
      n = ::send(socket_.fd(), data.data(), data.size(), MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) {
      written = static_cast<size_t>(n);
      if (written == data.size() && writeCompleteCallback_) {
        loop_->queueInLoop([self = shared_from_this()] { self->writeCompleteCallback_(self); });
      }
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      // EPIPE / ECONNRESET: the peer is gone. Close from the loop, not from
      // inside the caller's send().
      logIoError("send", errno);
      loop_->queueInLoop([self = shared_from_this()] { self->handleClose(); });
      return;
    }
  }
  const size_t remaining = data.size() - written;
  if (remaining == 0) return;
  const size_t queued = outputBuffer_.readableBytes();
  if (queued + remaining >= highWaterMark_ && queued < highWaterMark_ && highWaterMarkCallback_) {
    loop_->queueInLoop([self = shared_from_this(), size = queued + remaining] {
      self->highWaterMarkCallback_(self, size);
    });
  }
  loop_->bufferPool().lend(&outputBuffer_);
  outputBuffer_.append(data.substr(written));
  checkOutputLimit();
  // Nothing to arm: write interest is registered for good, and the socket
  // reports its next writable edge when the kernel frees send space.
}

void TcpConnection::shutdown() {
  State expected = State::kConnected;
  if (state_.compare_exchange_strong(expected, State::kDisconnecting)) {
    loop_->runInLoop([self = shared_from_this()] { self->shutdownInLoop(); });
  }
}

void TcpConnection::shutdownInLoop() {
  loop_->assertInLoopThread();
  if (!outputPending() && !writeShutdown_ && state_.load() != State::kDisconnected) {
    writeShutdown_ = true;
    socket_.shutdownWrite();
  }
  // Otherwise onOutputDrained() does it.
}

void TcpConnection::forceClose() {
  State state = state_.load();
  while (state == State::kConnected || state == State::kDisconnecting) {
    if (state_.compare_exchange_weak(state, State::kDisconnecting)) {
      loop_->queueInLoop([self = shared_from_this()] { self->handleClose(); });
      return;
    }
  }
}

void TcpConnection::closeAfterOutput() {
  loop_->assertInLoopThread();
  const State state = state_.load();
  if (state != State::kConnected && state != State::kDisconnecting) return;
  state_.store(State::kDisconnecting);
  closeWhenDrained_ = true;  // later sends are dropped; onOutputDrained() closes
  if (!outputPending()) {
    loop_->queueInLoop([self = shared_from_this()] { self->handleClose(); });
  }
}

void TcpConnection::stopRead() {
  loop_->assertInLoopThread();
  blockRead(kStoppedByUser);
}

void TcpConnection::startRead() {
  loop_->assertInLoopThread();
  unblockRead(kStoppedByUser);
}

void TcpConnection::blockRead(ReadBlock why) {
  const bool wasReading = readBlocks_ == 0;
  readBlocks_ |= why;
  if (wasReading && uring_ && recvArmed_) {
    // Data already received meanwhile is kept in the input buffer.
    io_uring_sqe* sqe = uring_->getSqe();
    io_uring_prep_cancel64(sqe, UringPoller::userData(UringOp::kRecv, uringToken_), 0);
    io_uring_sqe_set_data64(sqe, UringPoller::userData(UringOp::kIgnore, 0));
  }
}

void TcpConnection::unblockRead(ReadBlock why) {
  if ((readBlocks_ & why) == 0) return;
  readBlocks_ &= static_cast<uint8_t>(~why);
  if (readBlocks_ != 0) return;
  // From the loop, not here: the caller may be inside a callback of ours.
  loop_->queueInLoop([self = shared_from_this()] {
    if (!self->isReading() || self->state_.load() == State::kDisconnected) return;
    if (self->inputBuffer_.readableBytes() > 0) {
      self->messageCallback_(self, &self->inputBuffer_, Timestamp::now());
    }
    if (self->uring_) {
      self->armRecv();
    } else {
      // An edge may have come and gone while paused: look once.
      self->handleRead(Timestamp::now(), false);
    }
  });
}

size_t TcpConnection::bufferCapacity() const {
  loop_->assertInLoopThread();
  size_t bytes = inputBuffer_.capacity() + outputBuffer_.capacity() + sendingBuffer_.capacity();
  for (const PendingFile& file : pendingFiles_) bytes += file.after.capacity();
  return bytes;
}

size_t TcpConnection::bufferedOutputBytes() const {
  size_t bytes = outputBuffer_.readableBytes() + sendingBuffer_.readableBytes();
  for (const PendingFile& file : pendingFiles_) bytes += file.after.readableBytes();
  return bytes;
}

void TcpConnection::checkOutputLimit() {
  if (maxQueuedOutput_ == 0) return;
  if (readBlocks_ & kOutputFull) {
    if (bufferedOutputBytes() <= maxQueuedOutput_ / 2) unblockRead(kOutputFull);
  } else if (bufferedOutputBytes() > maxQueuedOutput_) {
    LOG_DEBUG << name_ << ": " << bufferedOutputBytes()
              << " bytes of output queued; not reading until it drains";
    blockRead(kOutputFull);
  }
}

size_t TcpConnection::queuedOutputBytes() const {
  loop_->assertInLoopThread();
  size_t bytes = outputBuffer_.readableBytes() + sendingBuffer_.readableBytes();
  for (const PendingFile& file : pendingFiles_)
    bytes += file.remaining + file.after.readableBytes();
  return bytes;
}

void TcpConnection::connectEstablished() {
  loop_->assertInLoopThread();
  assert(state_.load() == State::kConnecting);
  state_.store(State::kConnected);
  if (uring_) {
    uringToken_ = uring_->registerHandler(this);
    armRecv();
  } else {
    channel_.tie(shared_from_this());
    channel_.enableReadWrite();
  }
  if (idleWheel_) idleEntry_ = idleWheel_->add(shared_from_this());
  connectionCallback_(shared_from_this());
}

void TcpConnection::connectDestroyed() {
  loop_->assertInLoopThread();
  // The owner may destroy the wheel once every connection in it has been
  // through here, so nothing may touch it after this.
  if (idleWheel_) {
    idleWheel_->remove(idleEntry_);
    idleWheel_ = nullptr;
  }
  const State state = state_.load();
  if (state == State::kConnected || state == State::kDisconnecting) {
    state_.store(State::kDisconnected);
    if (uring_) {
      cancelOps();
    } else {
      channel_.disableAll();
    }
    connectionCallback_(shared_from_this());
  }
  pendingFiles_.clear();  // closes their fds; no op in flight refers to them
  if (uring_) {
    destroyed_ = true;
    releaseIfIdle();  // or when the last op in flight completes
    return;
  }
  channel_.disableAll();
  channel_.remove();
  // Release the fd now rather than when the last TcpConnectionPtr goes: a
  // user may hold one long after the close, and the peer must see it.
  socket_.close();
}

void TcpConnection::handleRead(Timestamp receiveTime, bool shortReadDrains) {
  loop_->assertInLoopThread();
  if (!isReading() || peerClosed_ || state_.load() == State::kDisconnected) return;
  const TcpConnectionPtr self = shared_from_this();
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    // With nothing left over from earlier reads, read into the loop's shared
    // scratch buffer, which stays in cache, rather than into this
    // connection's own (with 1000 connections, their buffers are megabytes of
    // cold memory); whatever the callback leaves unconsumed moves over after.
    Buffer* buffer = inputBuffer_.readableBytes() == 0 ? loop_->scratchBuffer() : &inputBuffer_;
    const Buffer::ReadResult result = buffer->readFd(socket_.fd());
    if (result.bytes > 0) {
      touchIdle();
      messageCallback_(self, buffer, receiveTime);
      if (buffer != &inputBuffer_) {
        inputBuffer_.append(buffer->view());  // usually nothing
        buffer->retrieveAll();
      } else {
        loop_->bufferPool().reclaim(&inputBuffer_);  // if the callback took everything
      }
      if (!isReading() || state_.load() == State::kDisconnected) return;
      // A short read means the socket is drained, unless the edge said more
      // (a FIN) is waiting behind the data or we are resuming without an edge.
      if (!result.filled && shortReadDrains) return;
      continue;
    }
    if (result.bytes == 0) {
      handlePeerClosed();
      return;
    }
    if (result.error == EAGAIN || result.error == EWOULDBLOCK) return;
    if (result.error == EINTR) continue;
    logIoError("read", result.error);
    handleClose();
    return;
  }
  // Still more to read: let the other ready channels have a turn first.
  loop_->queueInLoop([self, receiveTime] { self->handleRead(receiveTime, false); });
}

void TcpConnection::handlePeerClosed() {
  peerClosed_ = true;
  // What we owe the peer still goes out; close once it has.
  if (!outputPending()) handleClose();
}

void TcpConnection::handleWrite() {
  loop_->assertInLoopThread();
  // A writable edge with nothing queued (it also comes with read edges): no-op.
  if (state_.load() == State::kDisconnected || !outputPending()) return;
  if (writeQueued()) {
    onOutputDrained();
  } else {
    checkOutputLimit();
  }
}

bool TcpConnection::writeQueued() {
  for (;;) {
    while (outputBuffer_.readableBytes() > 0) {
      // Bytes just ahead of a file (an HTTP head) wait for its first segment
      // instead of leaving in a small packet of their own.
      const int flags = MSG_NOSIGNAL | (pendingFiles_.empty() ? 0 : MSG_MORE);
      const ssize_t n =
          ::send(socket_.fd(), outputBuffer_.peek(), outputBuffer_.readableBytes(), flags);
      if (n > 0) {
        outputBuffer_.retrieve(static_cast<size_t>(n));
        touchIdle();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;  // next edge
      logIoError("send", errno);
      handleClose();
      return false;
    }
    if (pendingFiles_.empty()) return true;
    if (sendFrontFile() != FileProgress::kDone) return false;
  }
}

TcpConnection::FileProgress TcpConnection::sendFrontFile() {
  PendingFile& file = pendingFiles_.front();
  while (file.remaining > 0) {
    const ssize_t n = ::sendfile(socket_.fd(), file.fd.get(), &file.offset, file.remaining);
    if (n > 0) {
      file.remaining -= static_cast<size_t>(n);
      touchIdle();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return FileProgress::kBlocked;
    // n == 0: the file shrank under us; the peer would wait forever for the
    // promised bytes, so close instead.
    if (n == 0) {
      LOG_ERROR << name_ << ": file ended " << file.remaining << " bytes early";
    } else {
      logIoError("sendfile", errno);
    }
    handleClose();
    return FileProgress::kFailed;
  }
  outputBuffer_.swap(file.after);  // outputBuffer_ is empty here
  pendingFiles_.pop_front();
  return FileProgress::kDone;
}

namespace {

// sendfile(2) has no MSG_NOSIGNAL: on a socket the peer has reset it raises
// SIGPIPE, whose default action kills the process. Ignore it, once, unless
// the program installed a handler of its own (then the handler runs and
// sendfile still fails with EPIPE, which closes the connection).
bool ignoreSigPipeUnlessHandled() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, nullptr);
  }
  return true;
}

}  // namespace

void TcpConnection::sendFile(UniqueFd file, off_t offset, size_t length, Buffer* head) {
  loop_->assertInLoopThread();
  [[maybe_unused]] static const bool sigPipeHandled = ignoreSigPipeUnlessHandled();
  const State state = state_.load();
  if (state != State::kConnected && state != State::kDisconnecting) return;
  if (closeWhenDrained_) return;
  if (head != nullptr && head->readableBytes() > 0) {
    // Queued, not written now, so that it leaves with MSG_MORE.
    Buffer& queue = pendingFiles_.empty() ? outputBuffer_ : pendingFiles_.back().after;
    queue.append(head->view());
    head->retrieveAll();
    checkOutputLimit();
  }
  if (length > 0) pendingFiles_.push_back(PendingFile{std::move(file), offset, length, Buffer()});
  // Start it from the loop rather than here: a write error closes the
  // connection, which must not happen inside the caller's callback.
  loop_->queueInLoop([self = shared_from_this()] {
    self->uring_ ? self->pumpUringOutput() : self->handleWrite();
  });
}

void TcpConnection::onOutputDrained() {
  // An idle connection keeps small buffers only; the storage of a burst
  // goes back to the loop's pool (or, if huge, to the allocator).
  loop_->bufferPool().reclaim(&outputBuffer_);
  loop_->bufferPool().reclaim(&sendingBuffer_);
  checkOutputLimit();
  if (writeCompleteCallback_) {
    loop_->queueInLoop([self = shared_from_this()] { self->writeCompleteCallback_(self); });
  }
  if (peerClosed_ || closeWhenDrained_) {
    handleClose();
    return;
  }
  if (state_.load() == State::kDisconnecting) shutdownInLoop();
}

void TcpConnection::handleClose() {
  loop_->assertInLoopThread();
  if (state_.load() == State::kDisconnected) return;
  state_.store(State::kDisconnected);
  if (uring_) {
    cancelOps();
  } else {
    channel_.disableAll();
  }
  TcpConnectionPtr guard(shared_from_this());
  connectionCallback_(guard);
  if (closeCallback_) closeCallback_(guard);
}

void TcpConnection::handleError() {
  const int err = Socket::getSocketError(socket_.fd());
  if (err == 0) return;
  LOG_DEBUG << name_ << ": socket error " << err << " " << strerrorTl(err);
  // A pending socket error on a connected TCP socket is fatal to it (reset,
  // timeout, unreachable); with edge-triggered polling it would not be
  // reported again, so close now.
  handleClose();
}

// ---- io_uring completion path ----

void TcpConnection::opStarted() {
  if (opsInFlight_++ == 0) keepAlive_ = shared_from_this();
}

void TcpConnection::opFinished() {
  // Called from onCompletion(), whose caller-held reference keeps us alive
  // past the reset below.
  if (--opsInFlight_ == 0) {
    keepAlive_.reset();
    releaseIfIdle();
  }
}

void TcpConnection::releaseIfIdle() {
  if (!destroyed_ || opsInFlight_ > 0) return;
  if (uringToken_ != 0) {
    uring_->unregisterHandler(uringToken_);
    uringToken_ = 0;
  }
  socket_.close();
}

void TcpConnection::cancelOps() {
  if (opsInFlight_ == 0) return;
  io_uring_sqe* sqe = uring_->getSqe();
  io_uring_prep_cancel_fd(sqe, socket_.fd(), IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, UringPoller::userData(UringOp::kIgnore, 0));
}

void TcpConnection::armRecv() {
  if (recvArmed_ || !isReading() || peerClosed_ || state_.load() == State::kDisconnected) return;
  io_uring_sqe* sqe = uring_->getSqe();
  io_uring_prep_recv_multishot(sqe, socket_.fd(), nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = uring_->buffers().groupId();
  io_uring_sqe_set_data64(sqe, UringPoller::userData(UringOp::kRecv, uringToken_));
  recvArmed_ = true;
  opStarted();
}

void TcpConnection::submitSend() {
  io_uring_sqe* sqe = uring_->getSqe();
  io_uring_prep_send(sqe, socket_.fd(), sendingBuffer_.peek(), sendingBuffer_.readableBytes(),
                     MSG_NOSIGNAL | (pendingFiles_.empty() ? 0 : MSG_MORE));
  io_uring_sqe_set_data64(sqe, UringPoller::userData(UringOp::kSend, uringToken_));
  sendInFlight_ = true;
  opStarted();
}

void TcpConnection::onCompletion(UringOp op, int32_t res, uint32_t flags) {
  const TcpConnectionPtr self = shared_from_this();
  if (op == UringOp::kRecv) {
    onRecv(self, res, flags);
  } else if (op == UringOp::kSend) {
    onSend(res);
  } else if (op == UringOp::kWritable) {
    onWritable(res);
  }
}

void TcpConnection::onRecv(const TcpConnectionPtr& self, int32_t res, uint32_t flags) {
  if (flags & IORING_CQE_F_BUFFER) {
    const auto bufferId = static_cast<uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT);
    if (res > 0) {
      loop_->bufferPool().lend(&inputBuffer_);
      inputBuffer_.append(uring_->buffers().data(bufferId, static_cast<size_t>(res)));
    }
    uring_->buffers().recycle(bufferId);
  }
  const bool more = flags & IORING_CQE_F_MORE;
  if (!more) {
    recvArmed_ = false;
    opFinished();
  }
  if (state_.load() == State::kDisconnected) return;
  if (res > 0) {
    touchIdle();
    if (isReading()) messageCallback_(self, &inputBuffer_, loop_->pollReturnTime());
    loop_->bufferPool().reclaim(&inputBuffer_);  // if the callback took everything
    if (!more) armRecv();  // the kernel ended the multishot (e.g. CQ overflow)
    return;
  }
  if (res == 0) {
    handlePeerClosed();
    return;
  }
  switch (-res) {
    case ENOBUFS:  // the ring ran dry; the data is still in the socket
    case EINTR:
    case EAGAIN:
      armRecv();
      return;
    case ECANCELED:
      // stopRead() or back-pressure cancelled it; if reading was turned
      // back on before the cancel landed, the re-arm then found the old
      // recv still armed and did nothing, so arm now (a no-op if paused).
      armRecv();
      return;
    default:
      logIoError("recv", -res);
      handleClose();
  }
}

void TcpConnection::onSend(int32_t res) {
  sendInFlight_ = false;
  opFinished();
  if (state_.load() == State::kDisconnected) return;
  if (res < 0) {
    if (res == -EINTR || res == -EAGAIN) {
      submitSend();
      return;
    }
    logIoError("send", -res);
    handleClose();
    return;
  }
  sendingBuffer_.retrieve(static_cast<size_t>(res));
  touchIdle();
  if (sendingBuffer_.readableBytes() > 0) {  // a short send: the rest, in order
    submitSend();
  } else {
    pumpUringOutput();
  }
  checkOutputLimit();
}

void TcpConnection::pumpUringOutput() {
  // One writer at a time: a send in flight or a file waiting for POLLOUT
  // resumes the pump when it completes.
  if (sendInFlight_ || writableArmed_ || state_.load() == State::kDisconnected) return;
  if (sendingBuffer_.readableBytes() > 0) {
    submitSend();
    return;
  }
  // Sent: its storage can serve another connection (the swap below hands
  // this one's queued bytes over in their own buffer).
  loop_->bufferPool().reclaim(&sendingBuffer_);
  for (;;) {
    if (outputBuffer_.readableBytes() > 0) {
      sendingBuffer_.swap(outputBuffer_);
      submitSend();
      return;
    }
    if (pendingFiles_.empty()) {
      onOutputDrained();
      return;
    }
    // sendfile(2) straight from the page cache to the socket (non-blocking):
    // io_uring has no sendfile op, and reading the file into a buffer to
    // send it costs a copy that the profile showed as most of the CPU.
    switch (sendFrontFile()) {
      case FileProgress::kDone:
        continue;
      case FileProgress::kBlocked:
        armWritable();
        return;
      case FileProgress::kFailed:
        return;
    }
  }
}

void TcpConnection::armWritable() {
  io_uring_sqe* sqe = uring_->getSqe();
  io_uring_prep_poll_add(sqe, socket_.fd(), POLLOUT);
  io_uring_sqe_set_data64(sqe, UringPoller::userData(UringOp::kWritable, uringToken_));
  writableArmed_ = true;
  opStarted();
}

void TcpConnection::onWritable(int32_t res) {
  writableArmed_ = false;
  opFinished();
  if (state_.load() == State::kDisconnected || res == -ECANCELED) return;
  // POLLERR / POLLHUP come back as events too: sendfile then reports them.
  pumpUringOutput();
}

void TcpConnection::logIoError(const char* call, int err) const {
  // A peer that resets, vanishes or stops acknowledging is everyday traffic
  // for a server (a storm of resets logged ~190k ERROR lines); only errors
  // that point at a bug or at this host are worth an ERROR.
  if (Socket::isPeerError(err)) {
    LOG_DEBUG << name_ << ": " << call << ": " << strerrorTl(err);
  } else {
    LOG_ERROR << name_ << ": " << call << ": " << strerrorTl(err) << " (errno=" << err << ")";
  }
}

const char* TcpConnection::stateName(State state) {
  switch (state) {
    case State::kConnecting:
      return "connecting";
    case State::kConnected:
      return "connected";
    case State::kDisconnecting:
      return "disconnecting";
    case State::kDisconnected:
      return "disconnected";
  }
  return "?";
}

}  // namespace libnet
