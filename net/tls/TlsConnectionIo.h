// TlsConnectionIo: a connection's I/O strategy under TLS. It stands between
// the TcpConnection (its Owner, which sees plaintext only) and the loop's
// backend strategy (epoll or io_uring, made here, which reports to this
// object and moves ciphertext), with a Session in between:
//
//   received ciphertext (scratch buffer / ring view), decrypted whole
//     -> Session::receive -> plaintext in this object's buffer
//     -> Owner::onInput (kTransient: the connection keeps what it keeps)
//   send(plaintext) -> Session::send -> each record -> backend write
//     (the backend strategy's queue holds the ciphertext; this object holds
//     only plaintext that waits: for the handshake, or behind a file)
//
// The connection is announced (Owner::onReady) when the handshake completes;
// a handshake still incomplete after the context's handshake timeout, a
// protocol error or a failed verification closes it (Owner::onIoError with
// EPROTO or ETIMEDOUT; a client logs the reason at ERROR, a server at DEBUG:
// bad peers are routine for a server). A client's failure before the
// handshake is done also gives the owner its reason first
// (Owner::onLayerFailure: the connection's layerFailure(), which TcpClient
// hands to the application). A peer's close_notify is the
// connection's end of input (Owner::onPeerClosed); a TCP end of stream without
// it is a truncation, reported as an error (ECONNABORTED), not as a clean end.
// endOutput() sends close_notify once everything queued has been encrypted.
//
// Files (queueFile) are read in 16 KiB chunks and encrypted as the backend's
// queue drains, at most kFileWindow bytes of ciphertext ahead. Plaintext
// written while a file is queued waits behind that file (in the file's
// `after` buffer) and is encrypted once the file's last chunk has been: TLS
// is one ordered stream of records, so nothing may be encrypted ahead of a
// file that was queued before it. Queued file bytes, and plaintext waiting
// behind them, count in bufferedOutput() (which the high-water mark sees)
// and in queuedOutput() (the connection's output limit), so a peer that asks
// for file after file without reading is stopped after a few, each holding
// an open fd.
//
// Owned by its TcpConnection; loop thread only, from start() on.
#pragma once

#include <list>
#include <memory>
#include <string>

#include "net/Buffer.h"
#include "net/ConnectionIo.h"
#include "net/TimerId.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsSession.h"

namespace libnet {
class EventLoop;
}  // namespace libnet

namespace libnet::tls {

class TlsConnectionIo final : public ConnectionIo,
                              private ConnectionIo::Owner,
                              private Session::Output {
 public:
  // Ciphertext of a file allowed to wait in the backend's queue.
  static constexpr size_t kFileWindow = 256 * 1024;

  // `parts` are the connection's; `peerName` as for Session.
  TlsConnectionIo(EventLoop* loop, const ConnectionIo::Parts& parts,
                  std::shared_ptr<const Context> context, const std::string& peerName);
  ~TlsConnectionIo() override;

  // ConnectionIo: what the connection asks.
  void start() override;
  void pauseRead() override { inner_->pauseRead(); }
  void resumeRead() override { inner_->resumeRead(); }
  [[nodiscard]] int write(std::string_view data) override;
  [[nodiscard]] int write(Buffer* buffer, InputKind kind) override;
  void queueFile(UniqueFd file, off_t offset, size_t length, Buffer* head) override;
  void flush() override;
  void close() override;
  [[nodiscard]] std::string_view applicationProtocol() const override { return session_.alpn(); }
  void release() override { inner_->release(); }
  [[nodiscard]] bool ready() const override { return session_.established(); }
  [[nodiscard]] size_t bufferedOutput() const override {
    return inner_->bufferedOutput() + heldBytes();
  }
  [[nodiscard]] size_t queuedOutput() const override {
    return inner_->queuedOutput() + heldBytes();
  }
  [[nodiscard]] bool outputDrained() const override { return drained(); }
  [[nodiscard]] size_t outputCapacity() const override {
    return inner_->outputCapacity() + pending_.capacity() + corked_.capacity();
  }
  void endOutput() override;

  [[nodiscard]] const Session& session() const { return session_; }

 private:
  // A file still to encrypt, and the plaintext written after it.
  struct PendingFile {
    UniqueFd fd;
    off_t offset;
    size_t remaining;
    Buffer after{0};
  };

  // ConnectionIo::Owner: what the backend's strategy reports.
  void onInput(Buffer* buffer, InputKind kind, Timestamp receiveTime) override;
  void onOutputProgress() override;
  void onOutputDrained() override;
  void onPeerClosed() override;
  void onIoError(const char* call, int err) override;
  [[nodiscard]] bool wantsInput() const override { return !closed_ && owner_->wantsInput(); }
  // Ciphertext is about as long as the plaintext it carries.
  [[nodiscard]] size_t inputRoom() const override { return owner_->inputRoom(); }
  [[nodiscard]] std::shared_ptr<void> keepAlive() override { return owner_->keepAlive(); }
  [[nodiscard]] UniqueFd onReleased() override { return owner_->onReleased(); }

  // Session::Output: a record to send.
  void onCiphertext(std::string_view bytes) override;

  // Reports what decrypting a delivery came to (`status`; the plaintext is
  // in plain_): a failure, the handshake completed, plaintext, the peer's
  // close_notify.
  void deliver(Session::Status status, bool wasEstablished, Timestamp receiveTime);
  // The handshake just completed: send what waited, announce.
  void onEstablished();
  // Encrypts and sends now, whatever is queued: 0, or the errno of a failed
  // write (EPROTO: OpenSSL refused).
  [[nodiscard]] int encrypt(std::string_view plaintext);
  // Encrypts all of `held` (plaintext that waited: for the handshake, or
  // behind a file) and gives its storage back; false, with the error
  // reported to the owner, if that failed.
  [[nodiscard]] bool encryptHeld(Buffer* held);
  // The session failed: log why and close.
  void fail(const char* during);
  // A client's handshake failed: tell the owner why (Owner::onLayerFailure).
  void layerFailure(std::string_view reason);
  // Encrypts file chunks, and the plaintext behind each file once it is
  // done, while the backend's queue is below kFileWindow; then, if nothing
  // more is held, the close_notify endOutput() asked for.
  void pumpFiles();
  // Drops the files (closing them) and the plaintext behind them.
  void dropFiles();
  void onHandshakeTimeout();
  // Plaintext waiting here (for the handshake, or behind files) and file
  // bytes not yet read.
  [[nodiscard]] size_t heldBytes() const { return pending_.readableBytes() + queuedBehind_; }
  // Whether output waits here, not yet encrypted.
  [[nodiscard]] bool holdsOutput() const { return pending_.readableBytes() > 0 || !files_.empty(); }
  // Whether the backend has written everything and nothing is held here.
  [[nodiscard]] bool drained() const;

  EventLoop* loop_;
  ConnectionIo::Owner* owner_;  // the connection
  Buffer plain_{0};             // decrypted, on its way up to the owner
  Session session_;
  ConnectionIo::Ptr inner_;  // the backend's strategy
  // Plaintext sent before the handshake completed, ahead of any file.
  Buffer pending_{0};
  // Records of one large send, gathered to leave in one write.
  Buffer corked_{0};
  bool corking_ = false;
  // A list, not a deque: an empty std::deque allocates, and most
  // connections never send a file.
  std::list<PendingFile> files_;
  // Bytes of files_ not yet read, plus the plaintext waiting behind them.
  size_t queuedBehind_ = 0;
  const Duration handshakeTimeout_;
  TimerId handshakeTimer_;
  int writeError_ = 0;  // a backend write that failed inside the session
  bool closed_ = false;
  bool endRequested_ = false;
  bool peerClosedReported_ = false;
};

}  // namespace libnet::tls
