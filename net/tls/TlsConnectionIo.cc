#include "net/tls/TlsConnectionIo.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "base/Logging.h"
#include "net/BufferPool.h"
#include "net/EventLoop.h"
#include "net/LoopInternals.h"
#include "net/Poller.h"

namespace libnet::tls {

namespace {

// The most plaintext one TLS record carries: a send up to this size is one
// record and one write; a larger one is gathered (corked) into one write.
constexpr size_t kRecordPlaintext = 16 * 1024;

}  // namespace

TlsConnectionIo::TlsConnectionIo(EventLoop* loop, const ConnectionIo::Parts& parts,
                                 std::shared_ptr<const Context> context,
                                 const std::string& peerName)
    : loop_(loop),
      owner_(parts.owner),
      session_(context, peerName, this),
      inner_(LoopInternals::poller(*loop).newConnectionIo({this, parts.fd, parts.room})),
      handshakeTimeout_(context->handshakeTimeout()) {}

TlsConnectionIo::~TlsConnectionIo() = default;

// ---- what the connection asks ----

void TlsConnectionIo::start() {
  inner_->start();
  if (handshakeTimeout_ > Duration::zero()) {
    // The connection owns this object: alive while the connection is.
    handshakeTimer_ = loop_->runAfter(handshakeTimeout_,
                                      [this, alive = std::weak_ptr<void>(owner_->keepAlive())] {
                                        if (alive.lock()) onHandshakeTimeout();
                                      });
  }
  if (!session_.isServer()) {
    if (session_.startHandshake() == Session::Status::kFailed) {
      fail("handshake");
      return;
    }
    if (const int err = std::exchange(writeError_, 0)) owner_->onIoError("send", err);
  }
}

int TlsConnectionIo::write(std::string_view data) {
  if (closed_ || data.empty()) return 0;
  if (!files_.empty()) {
    // Behind a file not yet all encrypted: the records must follow the
    // file's, so the bytes wait for it (pumpFiles()).
    Buffer& after = files_.back().after;
    LoopInternals::bufferPool(*loop_).lend(&after);
    after.append(data);
    queuedBehind_ += data.size();
    return 0;
  }
  if (!session_.established()) {
    // Before the handshake completes (a client's early send): held, then
    // encrypted in order once it has.
    LoopInternals::bufferPool(*loop_).lend(&pending_);
    pending_.append(data);
    return 0;
  }
  return encrypt(data);
}

int TlsConnectionIo::encrypt(std::string_view data) {
  // A send of more than one record leaves in one write rather than one per
  // record: the records gather here first (one copy of ciphertext, cheaper
  // than a system call per 16 KiB).
  corking_ = data.size() > kRecordPlaintext;
  if (corking_) LoopInternals::bufferPool(*loop_).lend(&corked_);
  const Session::Status status = session_.send(data);
  if (corking_) {
    corking_ = false;
    if (writeError_ == 0 && corked_.readableBytes() > 0) {
      writeError_ = inner_->write(&corked_, InputKind::kApplication);
    }
    corked_.retrieveAll();
    LoopInternals::bufferPool(*loop_).reclaim(&corked_);
  }
  if (status == Session::Status::kFailed) {
    // Encryption does not fail on good input; if OpenSSL says otherwise, the
    // connection cannot go on.
    LOG_ERROR << "TLS send failed: " << session_.error();
    return EPROTO;
  }
  return std::exchange(writeError_, 0);
}

int TlsConnectionIo::write(Buffer* buffer, InputKind) {
  // The bytes are encrypted into OpenSSL's buffer: the caller's storage is
  // never taken, whatever its kind.
  const int err = write(buffer->view());
  buffer->retrieveAll();
  return err;
}

void TlsConnectionIo::queueFile(UniqueFd file, off_t offset, size_t length, Buffer* head) {
  if (head != nullptr) {
    // Cannot fail here: a write error is also seen by the next write.
    if (const int err = write(head->view())) writeError_ = err;
    head->retrieveAll();
  }
  if (length == 0) return;
  files_.push_back(PendingFile{std::move(file), offset, length});
  queuedBehind_ += length;
}

void TlsConnectionIo::flush() {
  if (closed_) return;
  if (const int err = std::exchange(writeError_, 0)) {
    owner_->onIoError("send", err);
    return;
  }
  const bool held = holdsOutput();
  pumpFiles();
  if (closed_) return;
  // With ciphertext queued, the backend's flush reports the drain itself
  // (reported twice, a write-complete callback would run twice).
  const bool backendReports = !inner_->outputDrained();
  inner_->flush();
  // Everything may have gone out at once: the backend then reports nothing.
  if (held && !backendReports && !closed_ && drained()) owner_->onOutputDrained();
}

void TlsConnectionIo::close() {
  if (closed_) return;
  closed_ = true;
  if (handshakeTimer_.valid()) loop_->cancel(handshakeTimer_);
  handshakeTimer_ = TimerId();
  dropFiles();
  // The session's memory goes back to the heap when the connection is
  // destroyed, soon after: counted now, as the connection counts its
  // buffers, so that a burst of closed connections (thousands of abandoned
  // handshakes) makes the loop hand the free pages back to the system
  // (BufferPool::trimHeap) instead of keeping them for good.
  LoopInternals::bufferPool(*loop_).noteFreed(sizeof(*this) + session_.heldMemory());
  inner_->close();
}

void TlsConnectionIo::endOutput() {
  endRequested_ = true;
  if (!closed_ && files_.empty() && pending_.readableBytes() == 0) session_.sendCloseNotify();
}

// ---- what the backend reports ----

void TlsConnectionIo::onInput(Buffer* buffer, InputKind, Timestamp receiveTime) {
  const bool wasEstablished = session_.established();
  Session::Status status = Session::Status::kOk;
  if (!closed_) {
    LoopInternals::bufferPool(*loop_).lend(&plain_);
    status = session_.receive(buffer->view(), &plain_);
  }
  // The ciphertext is all taken: before any callback runs, the backend's
  // storage is empty again and a ring view goes back.
  buffer->retrieveAll();
  buffer->releaseBorrowed();
  if (!closed_) deliver(status, wasEstablished, receiveTime);
  plain_.retrieveAll();  // already, unless the session failed first
  LoopInternals::bufferPool(*loop_).reclaim(&plain_);
}

void TlsConnectionIo::deliver(Session::Status status, bool wasEstablished, Timestamp receiveTime) {
  if (const int err = std::exchange(writeError_, 0)) {
    owner_->onIoError("send", err);
    return;
  }
  if (status == Session::Status::kFailed) {
    fail(wasEstablished ? "read" : "handshake");
    return;
  }
  if (!wasEstablished && session_.established()) {
    onEstablished();
    if (closed_) return;
  }
  // Even while the owner is not reading: it keeps the plaintext, in order,
  // for when it reads again.
  if (plain_.readableBytes() > 0) owner_->onInput(&plain_, InputKind::kTransient, receiveTime);
  if (closed_ || status != Session::Status::kPeerClosed || peerClosedReported_) return;
  peerClosedReported_ = true;
  owner_->onPeerClosed();
}

void TlsConnectionIo::onEstablished() {
  if (handshakeTimer_.valid()) loop_->cancel(handshakeTimer_);
  handshakeTimer_ = TimerId();
  LOG_DEBUG << "TLS established: " << session_.version() << " " << session_.cipher()
            << (session_.resumed() ? " (resumed)" : "");
  const bool held = holdsOutput();
  // Ahead of any file queued meanwhile.
  if (pending_.readableBytes() > 0 && !encryptHeld(&pending_)) return;
  if (!files_.empty()) {
    pumpFiles();
    if (closed_) return;
  }
  owner_->onReady();
  // What waited may all have gone out at once: the backend then reports
  // nothing, and a connection waiting to shut down must hear of it.
  if (held && !closed_ && drained()) owner_->onOutputDrained();
}

void TlsConnectionIo::onOutputProgress() {
  owner_->onOutputProgress();
  if (!closed_ && !files_.empty()) pumpFiles();
}

void TlsConnectionIo::onOutputDrained() {
  if (!files_.empty()) pumpFiles();
  // Records encrypted since the backend's queue emptied (by pumpFiles(),
  // here or in onOutputProgress() just before) are still to go: the backend
  // reports again once they have.
  if (closed_ || !drained()) return;
  owner_->onOutputDrained();
}

void TlsConnectionIo::onIoError(const char* call, int err) {
  // A reset or a refused send before the handshake is done: the application
  // hears of it as a failed connect, and should learn which.
  if (!closed_ && !session_.established() && !session_.isServer()) {
    layerFailure(std::string("TLS handshake: ") + call + ": " + strerrorTl(err));
  }
  owner_->onIoError(call, err);
}

void TlsConnectionIo::onPeerClosed() {
  if (peerClosedReported_ || closed_) return;
  if (!session_.established()) {
    LOG_DEBUG << "TLS: peer closed during the handshake";
    layerFailure("the peer closed the connection during the TLS handshake");
    owner_->onIoError("TLS handshake (peer closed)", ECONNRESET);
    return;
  }
  // The end of the TCP stream without close_notify: the data may have been
  // cut short by anyone on the path, so it is not a clean end of input.
  owner_->onIoError("TLS read (end of stream without close_notify)", ECONNABORTED);
}

void TlsConnectionIo::onCiphertext(std::string_view bytes) {
  if (corking_) {
    corked_.append(bytes);
    return;
  }
  if (writeError_ != 0 || closed_) return;
  writeError_ = inner_->write(bytes);
}

// ---- helpers ----

bool TlsConnectionIo::drained() const { return inner_->outputDrained() && !holdsOutput(); }

void TlsConnectionIo::fail(const char* during) {
  if (session_.isServer()) {
    LOG_DEBUG << "TLS " << during << " failed: " << session_.error();
  } else {
    LOG_ERROR << "TLS " << during << " failed: " << session_.error();
  }
  if (!session_.established()) layerFailure(session_.error());
  owner_->onIoError("TLS", EPROTO);
}

void TlsConnectionIo::layerFailure(std::string_view reason) {
  // A server's failed handshakes reach no application (the connection was
  // never announced): a scanner's costs no string.
  if (!session_.isServer()) owner_->onLayerFailure(reason);
}

void TlsConnectionIo::onHandshakeTimeout() {
  handshakeTimer_ = TimerId();
  if (closed_ || session_.established()) return;
  LOG_DEBUG << "TLS handshake not completed in time; closing";
  layerFailure("the TLS handshake timed out");
  owner_->onIoError("TLS handshake", ETIMEDOUT);
}

void TlsConnectionIo::pumpFiles() {
  // Read into a per-thread chunk: no allocation, and the loop thread is the
  // only user between two calls.
  thread_local char chunk[kRecordPlaintext];
  while (!files_.empty() && !closed_ && session_.established() &&
         inner_->bufferedOutput() < kFileWindow) {
    PendingFile& file = files_.front();
    if (file.remaining == 0) {
      // The file is all encrypted: what was written behind it follows (all
      // of it: it is in memory already, as it would be in the queue).
      Buffer after(0);
      after.swap(file.after);
      files_.pop_front();
      queuedBehind_ -= after.readableBytes();
      if (!encryptHeld(&after)) return;
      continue;
    }
    const size_t want = std::min(file.remaining, sizeof chunk);
    const ssize_t n = ::pread(file.fd.get(), chunk, want, file.offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A file shorter than announced: the peer was promised more bytes.
      owner_->onIoError("pread", n < 0 ? errno : EIO);
      return;
    }
    file.offset += n;
    file.remaining -= static_cast<size_t>(n);
    queuedBehind_ -= static_cast<size_t>(n);
    if (file.remaining == 0) file.fd.reset();  // done with it: one fd fewer held
    if (const int err = encrypt(std::string_view(chunk, static_cast<size_t>(n)))) {
      owner_->onIoError("send", err);
      return;
    }
  }
  if (endRequested_ && !closed_) endOutput();
}

bool TlsConnectionIo::encryptHeld(Buffer* held) {
  Buffer bytes(0);
  bytes.swap(*held);
  const int err = encrypt(bytes.view());
  bytes.retrieveAll();
  LoopInternals::bufferPool(*loop_).reclaim(&bytes);
  if (err == 0) return true;
  owner_->onIoError("send", err);
  return false;
}

void TlsConnectionIo::dropFiles() {
  for (PendingFile& file : files_) {
    file.after.retrieveAll();
    LoopInternals::bufferPool(*loop_).reclaim(&file.after);
  }
  files_.clear();
  queuedBehind_ = 0;
}

}  // namespace libnet::tls
