#include "net/TcpConnection.h"

#include <sys/socket.h>

#include <cassert>
#include <cerrno>

#include "base/Logging.h"
#include "net/BufferPool.h"
#include "net/ConnectionCounters.h"
#include "net/EventLoop.h"
#include "net/LoopInternals.h"
#include "net/TcpConnectionImpl.h"

namespace libnet {

TcpConnectionPtr TcpConnection::create(EventLoop* loop, std::string name, UniqueFd sockfd,
                                       std::optional<SocketAddress> localAddr,
                                       std::optional<SocketAddress> peerAddr,
                                       const SocketAddress& localFallback,
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

TcpConnection::TcpConnection(EventLoop* loop, std::string name)
    : loop_(loop),
      name_(std::move(name)),
      connectionCallback_(defaultConnectionCallback),
      messageCallback_(defaultMessageCallback) {}

TcpConnection::~TcpConnection() = default;

TcpConnection::Seldom& TcpConnection::seldom() {
  if (!seldom_) seldom_ = std::make_unique<Seldom>();
  return *seldom_;
}

std::string_view TcpConnection::layerFailure() const {
  return seldom_ ? std::string_view(seldom_->layerFailure) : std::string_view();
}

void TcpConnection::setWriteCompleteCallback(WriteCompleteCallback cb) {
  // Servers and clients hand every connection theirs, most often empty.
  if (cb || seldom_) seldom().writeCompleteCallback = std::move(cb);
}

void TcpConnection::setHighWaterMarkCallback(HighWaterMarkCallback cb, size_t highWaterMark) {
  Seldom& s = seldom();
  s.highWaterMarkCallback = std::move(cb);
  s.highWaterMark = highWaterMark;
}

SocketAddress TcpConnection::localAddress() const {
  return impl().socket_.address(ConnectionSocket::kLocal);
}

SocketAddress TcpConnection::peerAddress() const {
  return impl().socket_.address(ConnectionSocket::kPeer);
}

std::optional<ucred> TcpConnection::peerCredentials() const {
  return impl().socket_.peerCredentials();
}

int TcpConnection::fd() const { return impl().socket_.fd(); }

bool TcpConnection::quietAndOpen() const {
  if (!connected() || peerClosed()) return false;
  const int socket = fd();
  if (socket < 0) return false;
  char byte = 0;
  const ssize_t n = ::recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
void TcpConnection::setTcpNoDelay(bool on) { impl().socket_.socket().setTcpNoDelay(on); }
Buffer* TcpConnection::inputBuffer() { return impl().input_.kept(); }

void TcpConnection::send(std::string_view message) {
  const State state = state_.load();
  if (state != State::kConnected && state != State::kDisconnecting) return;
  if (loop_->isInLoopThread()) {
    impl().sendInLoop(message);
  } else {
    send(std::string(message));
  }
}

void TcpConnection::send(std::string&& message) {
  const State state = state_.load();
  if (state != State::kConnected && state != State::kDisconnecting) return;
  if (loop_->isInLoopThread()) {
    impl().sendInLoop(message);
  } else {
    loop_->queueInLoop([self = shared_from_this(), message = std::move(message)] {
      self->impl().sendInLoop(message);
    });
  }
}

void TcpConnection::send(Buffer* buffer) {
  if (!loop_->isInLoopThread()) {
    send(buffer->retrieveAllAsString());
    return;
  }
  const State state = state_.load();
  if (state == State::kConnected || state == State::kDisconnecting) {
    impl().sendInLoop(buffer);
  } else {
    buffer->retrieveAll();
  }
}

void TcpConnection::sendFile(UniqueFd file, off_t offset, size_t length, Buffer* head) {
  loop_->assertInLoopThread();
  const State state = state_.load();
  if (state != State::kConnected && state != State::kDisconnecting) return;
  if (closeWhenDrained_) return;
  countSent(length + (head != nullptr ? head->readableBytes() : 0));
  // The head is queued, not written now, so that it leaves with MSG_MORE.
  impl().io_->queueFile(std::move(file), offset, length, head);
  impl().checkOutputLimit();
  // Started from the loop rather than here: a write error closes the
  // connection, which must not happen inside the caller's callback.
  loop_->queueInLoop([self = shared_from_this()] {
    if (self->state_.load() != State::kDisconnected) self->impl().io_->flush();
  });
}

std::string_view TcpConnection::applicationProtocol() const {
  loop_->assertInLoopThread();
  return impl().io_ ? impl().io_->applicationProtocol() : std::string_view();
}

size_t TcpConnection::queuedOutputBytes() const {
  loop_->assertInLoopThread();
  return impl().io_->queuedOutput();
}

size_t TcpConnection::bufferCapacity() const {
  loop_->assertInLoopThread();
  return impl().input_.capacity() + impl().io_->outputCapacity();
}

void TcpConnection::shutdown() {
  State expected = State::kConnected;
  if (state_.compare_exchange_strong(expected, State::kDisconnecting)) {
    loop_->runInLoop([self = shared_from_this()] { self->impl().shutdownInLoop(); });
  }
}

void TcpConnection::forceClose() {
  State state = state_.load();
  while (state == State::kConnected || state == State::kDisconnecting) {
    if (state_.compare_exchange_weak(state, State::kDisconnecting)) {
      loop_->queueInLoop([self = shared_from_this()] { self->impl().handleClose(); });
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
  if (impl().io_->outputDrained()) {
    // The FIN now, right behind the answer: the close below runs after
    // every other connection of this loop turn, and the socket closes a
    // functor round later still, while a client that reads to end of file
    // (HTTP/1.0, ab) waits for it and runs out of work (docs/benchmarks.md,
    // "ab and hey against nginx").
    if (!impl().writeShutdown_) {
      impl().writeShutdown_ = true;
      impl().socket_.socket().shutdownWrite();
    }
    loop_->queueInLoop([self = shared_from_this()] { self->impl().handleClose(); });
    return;
  }
  // The answer is still queued (io_uring: it leaves with the ring's next
  // submission): the strategy sends the FIN right behind it where it can,
  // else onOutputDrained() does, before the close.
  finByIo_ = impl().io_->shutdownAfterOutput();
}

void TcpConnection::stopRead() {
  loop_->assertInLoopThread();
  impl().blockRead(kStoppedByUser);
}

void TcpConnection::startRead() {
  loop_->assertInLoopThread();
  impl().unblockRead(kStoppedByUser);
}

void TcpConnection::setIdleWheel(TimingWheel* wheel) { impl().idleWheel_ = wheel; }

void TcpConnection::connectEstablished() {
  loop_->assertInLoopThread();
  assert(state_.load() == State::kConnecting);
  state_.store(State::kConnected);
  establishedSecond_ = static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(MonoClock::now().time_since_epoch())
          .count());
  Impl& self = impl();
  self.io_->start();
  if (self.idleWheel_) self.idleEntry_ = self.idleWheel_->add(shared_from_this());
  if (self.io_->ready()) self.announce();
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
    self.announceClosed();
  }
  // Its buffers are freed when the last reference goes, soon after, and so
  // is the connection itself (with its strategy, the owner's map entry, a
  // coroutine frame...): counted too, so that once a storm of connections
  // has passed the loop hands the heap they took back (BufferPool::trimHeap),
  // not only buffer storage. Without it 9000 connections closed left
  // 18 MB resident for good; about 2 KiB each is what they took (measured:
  // RSS with 9000 connections open, an HTTP server on io_uring).
  constexpr size_t kConnectionFootprint = sizeof(TcpConnection) + 2048;
  LoopInternals::bufferPool(*loop_).noteFreed(bufferCapacity() + kConnectionFootprint);
  // The fd is closed now (or, with operations in flight, when the last one
  // completes) rather than when the last TcpConnectionPtr goes: a user may
  // hold one long after the close, and the peer must see it.
  self.io_->release();
}

}  // namespace libnet
