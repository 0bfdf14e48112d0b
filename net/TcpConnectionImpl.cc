#include "net/TcpConnectionImpl.h"

#include <algorithm>
#include <cerrno>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/BufferPool.h"
#include "net/ConnectionAttachment.h"
#include "net/ConnectionCounters.h"
#include "net/ConnectionLayer.h"
#include "net/EventLoop.h"
#include "net/LoopInternals.h"
#include "net/Poller.h"

namespace libnet {

#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8
// Every connection is one of these and its control block, one allocation
// (800 bytes, a 816-byte malloc chunk). What an idle connection costs is
// docs/benchmarks.md's "Memory per idle connection", held at 1 KiB by
// tests/net/IdleConnectionMemoryTest; a member added here costs every
// connection, so this says when the total moves (libstdc++, 64-bit).
static_assert(sizeof(ConnectionSocket) == 72);
static_assert(sizeof(ConnectionInput) == 80);
constexpr size_t kImplSize = 784;
#endif

TcpConnection::Impl::Impl(EventLoop* loop, std::string name, UniqueFd sockfd,
                          std::optional<SocketAddress> localAddr,
                          std::optional<SocketAddress> peerAddr, const SocketAddress& localFallback,
                          const ConnectionLayer* layer)
    : TcpConnection(loop, std::move(name)),
      socket_(std::move(sockfd), std::move(localAddr), std::move(peerAddr), localFallback),
      io_(makeIo(loop, layer)) {
#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8
  static_assert(sizeof(TcpConnection) == 240 && sizeof(Impl) == kImplSize);
#endif
  LOG_DEBUG << "TcpConnection " << name_ << " fd=" << socket_.fd() << " created";
}

BufferPool& TcpConnection::Impl::pool() const { return LoopInternals::bufferPool(*loop_); }

ConnectionIo::Ptr TcpConnection::Impl::makeIo(EventLoop* loop, const ConnectionLayer* layer) {
  // Needed only while the strategies are made: not kept.
  ConnectionIo::Room room{strategyStorage_, sizeof strategyStorage_};
  const ConnectionIo::Parts parts{this, socket_.fd(), &room};
  return layer ? layer->newConnectionIo(loop, parts)
               : LoopInternals::poller(*loop).newConnectionIo(parts);
}

TcpConnection::Impl::~Impl() {
  LOG_DEBUG << "TcpConnection " << name_ << " fd=" << socket_.fd() << " destroyed in state "
            << stateName(state_.load());
}

namespace {

// A user callback of a connection, as the log line names it: written only
// if the callback threw (no string is built per message).
struct UserCallback {
  const std::string& connection;
  const char* what;
};

LogStream& operator<<(LogStream& stream, const UserCallback& callback) {
  return stream << callback.what << " callback of " << callback.connection
                << " (closing the connection)";
}

}  // namespace

template <class F>
bool TcpConnection::Impl::callUser(const char* what, F&& callback) noexcept {
  return callGuarded(UserCallback{name_, what}, std::forward<F>(callback));
}

bool TcpConnection::Impl::acceptsOutput() const {
  if (state_.load() != State::kDisconnected && !closeWhenDrained_) return true;
  // Routine when the peer has just gone (a send queued from another thread
  // meets the close), so not worth a warning.
  LOG_DEBUG << name_ << ": disconnected, dropping output";
  return false;
}

void TcpConnection::Impl::sendInLoop(std::string_view data) {
  loop_->assertInLoopThread();
  if (data.empty() || !acceptsOutput()) return;
  countSent(data.size());
  const size_t before = io_->bufferedOutput();
  afterWrite(io_->write(data), before);
}

void TcpConnection::Impl::sendInLoop(Buffer* buffer) {
  if (buffer->readableBytes() == 0) return;
  if (!acceptsOutput()) {
    buffer->retrieveAll();
    return;
  }
  countSent(buffer->readableBytes());
  const size_t before = io_->bufferedOutput();
  afterWrite(io_->write(buffer, input_.kindOf(buffer)), before);
}

void TcpConnection::Impl::afterWrite(int err, size_t bufferedBefore) {
  if (err != 0) {
    // EPIPE / ECONNRESET: the peer is gone. Close from the loop, not from
    // inside the caller's send().
    logIoError("send", err);
    loop_->queueInLoop([self = shared_from_this()] { self->impl().handleClose(); });
    return;
  }
  if (seldom_ && seldom_->highWaterMarkCallback) {
    const size_t mark = seldom_->highWaterMark;
    const size_t buffered = io_->bufferedOutput();
    if (bufferedBefore < mark && buffered >= mark) {
      loop_->queueInLoop([self = shared_from_this(), buffered] {
        Impl& conn = self->impl();
        if (!conn.callUser("high-water mark",
                           [&] { conn.seldom_->highWaterMarkCallback(self, buffered); })) {
          conn.closeAfterThrow();
        }
      });
    }
  }
  if (io_->outputDrained()) {  // all written at once
    queueWriteComplete();
    return;
  }
  checkOutputLimit();
}

void TcpConnection::Impl::shutdownInLoop() {
  loop_->assertInLoopThread();
  if (writeShutdown_ || state_.load() == State::kDisconnected) return;
  io_->endOutput();  // TLS: close_notify, after everything queued
  if (io_->outputDrained()) {
    writeShutdown_ = true;
    socket_.socket().shutdownWrite();
    // Both sides are done (an attachment kept the connection open after the
    // peer's half-close): nothing more can move.
    if (peerClosed_) handleClose();
  }
  // Otherwise onOutputDrained() does it.
}

void TcpConnection::Impl::handleClose() {
  loop_->assertInLoopThread();
  if (state_.load() == State::kDisconnected) return;
  state_.store(State::kDisconnected);
  io_->close();
  TcpConnectionPtr guard(shared_from_this());
  announceClosed();
  if (closeCallback_) closeCallback_(guard);
}

void TcpConnection::Impl::announceClosed() {
  // A throwing "down" callback is logged; the close goes on regardless, so
  // the owner still forgets the connection.
  const TcpConnectionPtr self = shared_from_this();
  if (announced_) callUser("connection (down)", [&] { connectionCallback_(self); });
  if (attachment_) attachment_->onClosed();
}

void TcpConnection::Impl::closeAfterThrow() {
  loop_->assertInLoopThread();
  input_.drop(pool());
  handleClose();
}

void TcpConnection::Impl::queueWriteComplete() {
  if (!seldom_ || !seldom_->writeCompleteCallback) return;
  loop_->queueInLoop([self = shared_from_this()] {
    Impl& conn = self->impl();
    // Cleared since it was queued: a second drain queued before the first
    // ran must not call an empty one.
    if (!conn.seldom_->writeCompleteCallback) return;
    if (!conn.callUser("write-complete", [&] { conn.seldom_->writeCompleteCallback(self); })) {
      conn.closeAfterThrow();
    }
  });
}

void TcpConnection::Impl::blockRead(ReadBlock why) {
  const bool wasReading = readBlocks_ == 0;
  readBlocks_ |= why;
  if (wasReading) io_->pauseRead();
}

void TcpConnection::Impl::unblockRead(ReadBlock why) {
  if ((readBlocks_ & why) == 0) return;
  readBlocks_ &= static_cast<uint8_t>(~why);
  if (readBlocks_ != 0) return;
  // From the loop, not here: the caller may be inside a callback of ours.
  loop_->queueInLoop([self = shared_from_this()] { self->impl().resumeInput(); });
}

void TcpConnection::Impl::resumeInput() {
  const auto open = [this] { return state_.load() != State::kDisconnected; };
  const auto reading = [this, &open] { return isReading() && open(); };
  if (!reading()) return;
  const Timestamp now = Timestamp::now();
  input_.resume(pool(), reading, open,
                [this, now] { deliverInput(input_.kept(), InputKind::kConnectionInput, now); });
  if (reading()) io_->resumeRead();
}

void TcpConnection::Impl::checkOutputLimit() {
  if (maxQueuedOutput_ == 0) return;
  // Everything queued counts, file ranges too: they take no memory, but each
  // holds an open fd, and a client that pipelines requests for files without
  // reading would otherwise make a server hold one per request.
  const size_t queued = io_->queuedOutput();
  if (readBlocks_ & kOutputFull) {
    if (queued <= maxQueuedOutput_ / 2) unblockRead(kOutputFull);
  } else if (queued > maxQueuedOutput_) {
    LOG_DEBUG << name_ << ": " << queued << " bytes of output queued; not reading until it drains";
    blockRead(kOutputFull);
  }
}

void TcpConnection::Impl::onReady() {
  if (state_.load() == State::kDisconnected) return;
  announce();
}

void TcpConnection::Impl::onLayerFailure(std::string_view reason) {
  std::string& failure = seldom().layerFailure;
  if (failure.empty()) failure.assign(reason);
}

void TcpConnection::Impl::announce() {
  announced_ = true;
  const TcpConnectionPtr self = shared_from_this();
  if (!callUser("connection (up)", [&] { connectionCallback_(self); })) closeAfterThrow();
}

void TcpConnection::Impl::onInput(Buffer* buffer, InputKind kind, Timestamp receiveTime) {
  touchIdle();
  countReceived(buffer->readableBytes());
  if (!input_.holdsBytes() && wantsInput()) {
    deliverInput(buffer, kind, receiveTime);  // in place: usually all consumed
    return;
  }
  // Behind bytes kept from before, or while not reading (an io_uring
  // receive that completed after the pause): kept, in order, and delivered
  // from our own buffer (resumeInput() once reading is back on).
  input_.keep(pool(), buffer, state_.load() != State::kDisconnected);
  if (wantsInput()) deliverInput(input_.kept(), InputKind::kConnectionInput, receiveTime);
}

void TcpConnection::Impl::deliverInput(Buffer* buffer, InputKind kind, Timestamp receiveTime) {
  const TcpConnectionPtr self = shared_from_this();
  input_.startDelivery(buffer, kind);
  const bool ok = callUser("message", [&] { messageCallback_(self, buffer, receiveTime); });
  // Before anything else can run on this loop: the storage may be shared.
  input_.settle(pool(), buffer, kind, ok && state_.load() != State::kDisconnected);
  if (!ok) closeAfterThrow();
}

void TcpConnection::Impl::onOutputProgress() {
  touchIdle();
  checkOutputLimit();
  if (attachment_) attachment_->onOutputProgress();
}

void TcpConnection::Impl::onOutputDrained() {
  checkOutputLimit();
  queueWriteComplete();
  if (attachment_) attachment_->onOutputDrained();
  if (closeWhenDrained_ && !finByIo_ && !writeShutdown_ && io_->outputDrained()) {
    // The FIN right behind the answer: the socket itself closes only when
    // the connection is released, a functor round after the close below
    // (epoll, an answer that did not go at once, or ended in a file).
    writeShutdown_ = true;
    socket_.socket().shutdownWrite();
  }
  if ((peerClosed_ && !attachment_) || closeWhenDrained_) {
    handleClose();
    return;
  }
  if (state_.load() == State::kDisconnecting) shutdownInLoop();
}

void TcpConnection::Impl::onPeerClosed() {
  peerClosed_ = true;
  if (attachment_ && !writeShutdown_) {
    // The layer decides when to close (see ConnectionAttachment).
    attachment_->onPeerHalfClosed();
    return;
  }
  // What we owe the peer still goes out; close once it has.
  io_->endOutput();
  if (io_->outputDrained()) handleClose();
}

void TcpConnection::Impl::onIoError(const char* call, int err) {
  logIoError(call, err);
  handleClose();
}

bool TcpConnection::Impl::wantsInput() const {
  return readBlocks_ == 0 && !peerClosed_ && state_.load() != State::kDisconnected;
}

size_t TcpConnection::Impl::inputRoom() const {
  if (maxQueuedOutput_ == 0) return ConnectionIo::kNoInputLimit;
  // One byte past the limit pauses reading (checkOutputLimit): an echo that
  // takes in all of this has paused itself, with nothing read beyond it.
  const size_t queued = io_->queuedOutput();
  if (queued > maxQueuedOutput_) return 0;
  return std::min(maxQueuedOutput_ - queued, ConnectionIo::kNoInputLimit - 1) + 1;
}

void TcpConnection::Impl::logIoError(const char* call, int err) const {
  // A peer that resets, vanishes or stops acknowledging is everyday traffic
  // for a server (a storm of resets logged ~190k ERROR lines); only errors
  // that point at a bug or at this host are worth an ERROR.
  if (Socket::isPeerError(err)) {
    LOG_DEBUG << name_ << ": " << call << ": " << strerrorTl(err);
  } else {
    LOG_ERROR << name_ << ": " << call << ": " << strerrorTl(err) << " (errno=" << err << ")";
  }
}

const char* TcpConnection::Impl::stateName(State state) {
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
