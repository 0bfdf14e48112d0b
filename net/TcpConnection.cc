#include "net/TcpConnection.h"

#include <algorithm>
#include <cassert>
#include <cerrno>

#include "base/Logging.h"
#include "net/BufferPool.h"
#include "net/ConnectionAttachment.h"
#include "net/ConnectionIo.h"
#include "net/ConnectionLayer.h"
#include "net/EventLoop.h"
#include "net/Poller.h"
#include "net/TimingWheel.h"

namespace libnet {

namespace {

// The most input the message callback is handed at once from what was kept
// while reading was off (bytes an io_uring receive delivered after the pause
// was decided, or while the application had stopped reading), on top of what
// it left unread; between slices the connection may pause again, and the
// rest then waits. Delivered whole, such a block made an echo queue all of it
// at once, past the output limit by as much. The same bound as TLS's
// (TlsConnectionIo), and the size of one epoll read.
constexpr size_t kInputSlice = 64 * 1024;

}  // namespace

// The half of a connection that faces the backend: what names the library's
// inside (the I/O strategy, the output queue, the kind of input being
// delivered, the idle wheel and its entry), and the ConnectionIo::Owner that
// the strategy reports to. A class derived from TcpConnection, not a member
// object or a pointer, so that neither side pays to reach the other: the
// strategy's calls land here with `this` in hand, and TcpConnection's code
// gets here through impl(), a static_cast. The object is as big as when
// TcpConnection was all of it. TcpConnection's members are this class's to
// use (it is nested in it). Its members are destroyed before the base's: the
// strategy first, then the output queue, then (with the base) the input
// buffer, so the strategy never outlives the buffers it works on.
class TcpConnection::Impl final : public TcpConnection, private ConnectionIo::Owner {
 public:
  Impl(EventLoop* loop, std::string name, UniqueFd sockfd, std::optional<InetAddress> localAddr,
       std::optional<InetAddress> peerAddr, const InetAddress& localFallback,
       const ConnectionLayer* layer);

  [[nodiscard]] size_t bufferedOutput() const { return io_->bufferedOutput(); }
  [[nodiscard]] bool outputDrained() const { return io_->outputDrained(); }
  // Runs the message callback on `buffer` and settles what it leaves (see
  // ConnectionIo::Owner::onInput): the one place that decides.
  void deliverInput(Buffer* buffer, InputKind kind, Timestamp receiveTime);
  // Reading is back on: hands the message callback what the input buffer
  // held meanwhile, kInputSlice bytes at a time, then reads again.
  void resumeInput();
  // The kind of a Buffer passed to send(): the input being delivered, the
  // input buffer, or the application's own.
  [[nodiscard]] InputKind kindOf(const Buffer* buffer) const;

  // Touched on every read when set (TcpServer's idle timeout); one branch
  // when not.
  TimingWheel* idleWheel_ = nullptr;
  TimingWheel::Entry idleEntry_ = TimingWheel::kNoEntry;
  // The buffer the message callback is looking at, while it runs.
  Buffer* delivering_ = nullptr;
  InputKind deliveringKind_ = InputKind::kConnectionInput;
  // Where the backend's strategy is built (ConnectionIo::Room): both
  // backends' fit, so a connection is one allocation.
  alignas(std::max_align_t) unsigned char strategyStorage_[ConnectionIo::Room::kConnectionRoom];
  ConnectionIo::Room strategyRoom_{strategyStorage_, sizeof strategyStorage_};
  ConnectionIo::Ptr io_;  // after its room

 private:
  void settleInput(Buffer* buffer, InputKind kind, bool keepLeftover);
  // Bytes arrived, or queued output moved (a slow reader is not an idle
  // one): the idle timeout starts over.
  void touchIdle() {
    if (idleWheel_) idleWheel_->touch(idleEntry_);
  }

  // ConnectionIo::Owner: what the I/O strategy reports.
  void onInput(Buffer* buffer, InputKind kind, Timestamp receiveTime) override;
  void onOutputProgress() override;
  void onOutputDrained() override;
  void onPeerClosed() override;
  void onIoError(const char* call, int err) override;
  [[nodiscard]] bool wantsInput() const override;
  [[nodiscard]] size_t inputRoom() const override;
  [[nodiscard]] std::shared_ptr<void> keepAlive() override { return shared_from_this(); }
  [[nodiscard]] UniqueFd onReleased() override { return TcpConnection::onReleased(); }
  void onReady() override;
};

TcpConnectionPtr TcpConnection::create(EventLoop* loop, std::string name, UniqueFd sockfd,
                                       std::optional<InetAddress> localAddr,
                                       std::optional<InetAddress> peerAddr,
                                       const InetAddress& localFallback,
                                       const ConnectionLayer* layer) {
  return std::make_shared<Impl>(loop, std::move(name), std::move(sockfd), std::move(localAddr),
                                std::move(peerAddr), localFallback, layer);
}

TcpConnection::Impl& TcpConnection::impl() { return static_cast<Impl&>(*this); }
const TcpConnection::Impl& TcpConnection::impl() const { return static_cast<const Impl&>(*this); }

void defaultConnectionCallback(const TcpConnectionPtr& conn) {
  LOG_TRACE << conn->localAddress().toIpPort() << " -> " << conn->peerAddress().toIpPort() << " is "
            << (conn->connected() ? "UP" : "DOWN");
}

void defaultMessageCallback(const TcpConnectionPtr&, Buffer* buffer, Timestamp) {
  buffer->retrieveAll();
}

TcpConnection::TcpConnection(EventLoop* loop, std::string name, UniqueFd sockfd,
                             std::optional<InetAddress> localAddr,
                             std::optional<InetAddress> peerAddr, const InetAddress& localFallback)
    : loop_(loop),
      name_(std::move(name)),
      socket_(std::move(sockfd)),
      addressesKnown_(
          static_cast<uint8_t>((localAddr ? kLocalKnown : 0) | (peerAddr ? kPeerKnown : 0))),
      localAddr_(localAddr.value_or(localFallback)),
      peerAddr_(peerAddr.value_or(InetAddress())),
      connectionCallback_(defaultConnectionCallback),
      messageCallback_(defaultMessageCallback) {}

TcpConnection::Impl::Impl(EventLoop* loop, std::string name, UniqueFd sockfd,
                          std::optional<InetAddress> localAddr, std::optional<InetAddress> peerAddr,
                          const InetAddress& localFallback, const ConnectionLayer* layer)
    : TcpConnection(loop, std::move(name), std::move(sockfd), std::move(localAddr),
                    std::move(peerAddr), localFallback),
      io_(layer ? layer->newConnectionIo(loop, {this, socket_.fd(), &strategyRoom_})
                : loop->poller().newConnectionIo({this, socket_.fd(), &strategyRoom_})) {
  LOG_DEBUG << "TcpConnection " << name_ << " fd=" << socket_.fd() << " created";
}

TcpConnection::~TcpConnection() {
  LOG_DEBUG << "TcpConnection " << name_ << " fd=" << socket_.fd() << " destroyed in state "
            << stateName(state_.load());
}

template <class F>
bool TcpConnection::callUser(const char* what, F&& callback) noexcept {
  try {
    callback();
    return true;
  } catch (const std::exception& e) {
    LOG_ERROR << name_ << ": " << what << " callback threw: " << e.what()
              << "; closing the connection";
  } catch (...) {
    LOG_ERROR << name_ << ": " << what << " callback threw a non-standard exception"
              << "; closing the connection";
  }
  return false;
}

InetAddress TcpConnection::address(AddressBit which) const {
  InetAddress& slot = which == kLocalKnown ? localAddr_ : peerAddr_;
  if (addressesKnown_.load(std::memory_order_acquire) & which) return slot;
  MutexLock lock(addressMutex_);
  if ((addressesKnown_.load(std::memory_order_relaxed) & which) == 0) {
    // Still open: onReleased() takes the fd under this mutex. A failed lookup
    // (the peer reset the connection already) leaves the fallback.
    if (socket_.fd() >= 0) {
      if (std::optional<InetAddress> found =
              Socket::tryAddress(socket_.fd(), which == kPeerKnown)) {
        slot = *found;
      }
    }
    addressesKnown_.fetch_or(which, std::memory_order_release);
  }
  return slot;
}

UniqueFd TcpConnection::onReleased() {
  MutexLock lock(addressMutex_);
  return socket_.releaseFd();
}

// ---- sending ----

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
  if (!loop_->isInLoopThread()) {
    send(buffer->retrieveAllAsString());
    return;
  }
  const State state = state_.load();
  if (state == State::kConnected || state == State::kDisconnecting) {
    sendInLoop(buffer);
  } else {
    buffer->retrieveAll();
  }
}

void TcpConnection::logDroppedOutput() const {
  // Routine when the peer has just gone (a send queued from another thread
  // meets the close), so not worth a warning.
  LOG_DEBUG << name_ << ": disconnected, dropping output";
}

void TcpConnection::sendInLoop(std::string_view data) {
  loop_->assertInLoopThread();
  if (data.empty() || !acceptsOutput()) return;
  const size_t before = impl().bufferedOutput();
  afterWrite(impl().io_->write(data), before);
}

void TcpConnection::sendInLoop(Buffer* buffer) {
  if (buffer->readableBytes() == 0) return;
  if (!acceptsOutput()) {
    buffer->retrieveAll();
    return;
  }
  const size_t before = impl().bufferedOutput();
  afterWrite(impl().io_->write(buffer, impl().kindOf(buffer)), before);
}

InputKind TcpConnection::Impl::kindOf(const Buffer* buffer) const {
  if (buffer == delivering_) return deliveringKind_;
  if (buffer == &inputBuffer_) return InputKind::kConnectionInput;
  return InputKind::kApplication;
}

void TcpConnection::afterWrite(int err, size_t bufferedBefore) {
  if (err != 0) {
    // EPIPE / ECONNRESET: the peer is gone. Close from the loop, not from
    // inside the caller's send().
    logIoError("send", err);
    loop_->queueInLoop([self = shared_from_this()] { self->handleClose(); });
    return;
  }
  const size_t buffered = impl().bufferedOutput();
  if (highWaterMarkCallback_ && bufferedBefore < highWaterMark_ && buffered >= highWaterMark_) {
    loop_->queueInLoop([self = shared_from_this(), buffered] {
      if (!self->callUser("high-water mark",
                          [&] { self->highWaterMarkCallback_(self, buffered); })) {
        self->closeAfterThrow();
      }
    });
  }
  if (impl().outputDrained()) {  // all written at once
    queueWriteComplete();
    return;
  }
  checkOutputLimit();
}

void TcpConnection::sendFile(UniqueFd file, off_t offset, size_t length, Buffer* head) {
  loop_->assertInLoopThread();
  const State state = state_.load();
  if (state != State::kConnected && state != State::kDisconnecting) return;
  if (closeWhenDrained_) return;
  // The head is queued, not written now, so that it leaves with MSG_MORE.
  impl().io_->queueFile(std::move(file), offset, length, head);
  checkOutputLimit();
  // Started from the loop rather than here: a write error closes the
  // connection, which must not happen inside the caller's callback.
  loop_->queueInLoop([self = shared_from_this()] {
    if (self->state_.load() != State::kDisconnected) self->impl().io_->flush();
  });
}

size_t TcpConnection::queuedOutputBytes() const {
  loop_->assertInLoopThread();
  return impl().io_->queuedOutput();
}

size_t TcpConnection::bufferCapacity() const {
  loop_->assertInLoopThread();
  return inputBuffer_.capacity() + impl().io_->outputCapacity();
}

// ---- closing ----

void TcpConnection::shutdown() {
  State expected = State::kConnected;
  if (state_.compare_exchange_strong(expected, State::kDisconnecting)) {
    loop_->runInLoop([self = shared_from_this()] { self->shutdownInLoop(); });
  }
}

void TcpConnection::shutdownInLoop() {
  loop_->assertInLoopThread();
  if (writeShutdown_ || state_.load() == State::kDisconnected) return;
  impl().io_->endOutput();  // TLS: close_notify, after everything queued
  if (impl().outputDrained()) {
    writeShutdown_ = true;
    socket_.shutdownWrite();
    // Both sides are done (an attachment kept the connection open after the
    // peer's half-close): nothing more can move.
    if (peerClosed_) handleClose();
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
  impl().io_->endOutput();
  if (impl().outputDrained()) {
    loop_->queueInLoop([self = shared_from_this()] { self->handleClose(); });
  }
}

void TcpConnection::handleClose() {
  loop_->assertInLoopThread();
  if (state_.load() == State::kDisconnected) return;
  state_.store(State::kDisconnected);
  impl().io_->close();
  TcpConnectionPtr guard(shared_from_this());
  announceClosed();
  if (closeCallback_) closeCallback_(guard);
}

void TcpConnection::announceClosed() {
  // A throwing "down" callback is logged; the close goes on regardless, so
  // the owner still forgets the connection.
  const TcpConnectionPtr self = shared_from_this();
  if (announced_) callUser("connection (down)", [&] { connectionCallback_(self); });
  if (attachment_) attachment_->onClosed();
}

void TcpConnection::closeAfterThrow() {
  loop_->assertInLoopThread();
  inputBuffer_.retrieveAll();
  loop_->bufferPool().reclaim(&inputBuffer_);
  handleClose();
}

void TcpConnection::queueWriteComplete() {
  if (!writeCompleteCallback_) return;
  loop_->queueInLoop([self = shared_from_this()] {
    // Cleared since it was queued (HttpServer's resume clears its own): a
    // second drain queued before the first ran must not call an empty one.
    if (!self->writeCompleteCallback_) return;
    if (!self->callUser("write-complete", [&] { self->writeCompleteCallback_(self); })) {
      self->closeAfterThrow();
    }
  });
}

// ---- reading ----

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
  if (wasReading) impl().io_->pauseRead();
}

void TcpConnection::unblockRead(ReadBlock why) {
  if ((readBlocks_ & why) == 0) return;
  readBlocks_ &= static_cast<uint8_t>(~why);
  if (readBlocks_ != 0) return;
  // From the loop, not here: the caller may be inside a callback of ours.
  loop_->queueInLoop([self = shared_from_this()] { self->impl().resumeInput(); });
}

void TcpConnection::Impl::resumeInput() {
  const auto reading = [this] { return isReading() && state_.load() != State::kDisconnected; };
  if (!reading()) return;
  if (inputBuffer_.readableBytes() > kInputSlice) {
    // The held bytes move out, and come back a slice at a time behind what
    // the callback leaves of the one before. One copy, on this path only.
    Buffer held(0);
    held.swap(inputBuffer_);
    const Timestamp now = Timestamp::now();
    while (held.readableBytes() > 0 && reading()) {
      const size_t n = std::min(held.readableBytes(), kInputSlice);
      loop_->bufferPool().lend(&inputBuffer_);
      inputBuffer_.append(std::string_view(held.peek(), n));
      held.retrieve(n);
      deliverInput(&inputBuffer_, InputKind::kConnectionInput, now);
    }
    if (held.readableBytes() > 0 && state_.load() != State::kDisconnected) {
      // Paused again: the rest waits, in order, for the next resume.
      loop_->bufferPool().lend(&inputBuffer_);
      inputBuffer_.append(held.view());
    }
    held.retrieveAll();
    loop_->bufferPool().reclaim(&held);
  } else if (inputBuffer_.readableBytes() > 0) {
    deliverInput(&inputBuffer_, InputKind::kConnectionInput, Timestamp::now());
  }
  if (!reading()) return;
  io_->resumeRead();
}

void TcpConnection::checkOutputLimit() {
  if (maxQueuedOutput_ == 0) return;
  const size_t buffered = impl().bufferedOutput();
  if (readBlocks_ & kOutputFull) {
    if (buffered <= maxQueuedOutput_ / 2) unblockRead(kOutputFull);
  } else if (buffered > maxQueuedOutput_) {
    LOG_DEBUG << name_ << ": " << buffered
              << " bytes of output queued; not reading until it drains";
    blockRead(kOutputFull);
  }
}

// ---- lifetime ----

void TcpConnection::setIdleWheel(TimingWheel* wheel) { impl().idleWheel_ = wheel; }

void TcpConnection::connectEstablished() {
  loop_->assertInLoopThread();
  assert(state_.load() == State::kConnecting);
  state_.store(State::kConnected);
  Impl& self = impl();
  self.io_->start();
  if (self.idleWheel_) self.idleEntry_ = self.idleWheel_->add(shared_from_this());
  if (self.io_->ready()) announce();
}

void TcpConnection::Impl::onReady() {
  if (state_.load() == State::kDisconnected) return;
  announce();
}

void TcpConnection::announce() {
  announced_ = true;
  const TcpConnectionPtr self = shared_from_this();
  if (!callUser("connection (up)", [&] { connectionCallback_(self); })) closeAfterThrow();
}

void TcpConnection::connectDestroyed() {
  loop_->assertInLoopThread();
  Impl& self = impl();
  // The owner may destroy the wheel once every connection in it has been
  // through here, so nothing may touch it after this.
  if (self.idleWheel_) {
    self.idleWheel_->remove(self.idleEntry_);
    self.idleWheel_ = nullptr;
  }
  const State state = state_.load();
  if (state == State::kConnected || state == State::kDisconnecting) {
    state_.store(State::kDisconnected);
    self.io_->close();
    announceClosed();
  }
  // Its buffers are freed when the last reference goes, soon after, and so
  // is the connection itself (with its strategy, the owner's map entry, a
  // coroutine frame...): counted too, so that once a storm of connections
  // has passed the loop hands the heap they took back (BufferPool::trimHeap),
  // not only buffer storage. Without it 9000 connections closed left
  // 18 MB resident for good; about 2 KiB each is what they took (measured:
  // RSS with 9000 connections open, an HTTP server on io_uring).
  constexpr size_t kConnectionFootprint = sizeof(TcpConnection) + 2048;
  loop_->bufferPool().noteFreed(bufferCapacity() + kConnectionFootprint);
  // The fd is closed now (or, with operations in flight, when the last one
  // completes) rather than when the last TcpConnectionPtr goes: a user may
  // hold one long after the close, and the peer must see it.
  self.io_->release();
}

// ---- what the I/O strategy reports ----

void TcpConnection::Impl::onInput(Buffer* buffer, InputKind kind, Timestamp receiveTime) {
  touchIdle();
  if (inputBuffer_.readableBytes() == 0 && wantsInput()) {
    deliverInput(buffer, kind, receiveTime);  // in place: usually all consumed
    return;
  }
  // Behind bytes kept from before, or while not reading (an io_uring
  // receive that completed after the pause): kept, in order, and delivered
  // from our own buffer (resumeInput() once reading is back on).
  if (state_.load() != State::kDisconnected) {
    loop_->bufferPool().lend(&inputBuffer_);
    inputBuffer_.append(buffer->view());
  }
  buffer->retrieveAll();
  buffer->releaseBorrowed();  // a view goes back to the ring (no-op otherwise)
  if (wantsInput()) deliverInput(&inputBuffer_, InputKind::kConnectionInput, receiveTime);
}

void TcpConnection::Impl::deliverInput(Buffer* buffer, InputKind kind, Timestamp receiveTime) {
  const TcpConnectionPtr self = shared_from_this();
  delivering_ = buffer;
  deliveringKind_ = kind;
  const bool ok = callUser("message", [&] { messageCallback_(self, buffer, receiveTime); });
  delivering_ = nullptr;
  // Before anything else can run on this loop: the storage may be shared.
  settleInput(buffer, kind, ok && state_.load() != State::kDisconnected);
  if (!ok) closeAfterThrow();
}

void TcpConnection::Impl::settleInput(Buffer* buffer, InputKind kind, bool keepLeftover) {
  switch (kind) {
    case InputKind::kConnectionInput:
      if (!keepLeftover) buffer->retrieveAll();
      loop_->bufferPool().reclaim(&inputBuffer_);  // if nothing is left
      return;
    case InputKind::kTransient:
    case InputKind::kRingView:
      // Usually nothing is left; a partial message moves to our own buffer.
      if (keepLeftover && buffer->readableBytes() > 0) {
        loop_->bufferPool().lend(&inputBuffer_);
        inputBuffer_.append(buffer->view());
      }
      buffer->retrieveAll();
      buffer->releaseBorrowed();  // a view goes back to the ring (no-op otherwise)
      return;
    case InputKind::kApplication:
      break;
  }
  assert(false && "input is never of the application's own");
}

void TcpConnection::Impl::onOutputProgress() {
  touchIdle();
  checkOutputLimit();
}

void TcpConnection::Impl::onOutputDrained() {
  checkOutputLimit();
  queueWriteComplete();
  if (attachment_) attachment_->onOutputDrained();
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
  if (outputDrained()) handleClose();
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
  const size_t buffered = bufferedOutput();
  if (buffered > maxQueuedOutput_) return 0;
  return std::min(maxQueuedOutput_ - buffered, ConnectionIo::kNoInputLimit - 1) + 1;
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
