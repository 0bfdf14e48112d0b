// TcpConnection::Impl: the half of a TcpConnection that faces the backend
// (see TcpConnection.h). The library's own: included by TcpConnection.cc and
// TcpConnectionImpl.cc only. Loop thread only, as the calls that reach it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "net/ConnectionCounters.h"
#include "net/ConnectionInput.h"
#include "net/ConnectionIo.h"
#include "net/ConnectionSocket.h"
#include "net/TcpConnection.h"
#include "net/TimingWheel.h"

namespace libnet {

class ConnectionLayer;

// See TcpConnection::seldom_.
struct TcpConnection::Seldom {
  WriteCompleteCallback writeCompleteCallback;
  HighWaterMarkCallback highWaterMarkCallback;
  size_t highWaterMark = kDefaultHighWaterMark;
  std::string layerFailure;  // why a layer closed the connection before it was announced
};

// Inline: on every send and every read.
inline void TcpConnection::countSent(size_t n) {
  bytesSent_ += n;
  if (counters_) ConnectionCounters::add(counters_->bytesSent, n);
}

inline void TcpConnection::countReceived(size_t n) {
  bytesReceived_ += n;
  if (counters_) ConnectionCounters::add(counters_->bytesReceived, n);
}

// The half of a connection that faces the backend: what names the library's
// inside (the socket, the input and its settlement, the I/O strategy, the
// idle wheel and its entry), the ConnectionIo::Owner that the strategy
// reports to, and the machinery behind the public calls (writing, the
// output limit, closing). A class derived from TcpConnection, not a member
// object or a pointer, so that neither side pays to reach the other: the
// strategy's calls land here with `this` in hand, and TcpConnection's code
// gets here through impl(), a static_cast. TcpConnection's members are this
// class's to use (it is nested in it). Its members are destroyed in reverse
// order: the strategy first, then the input, then the socket (whose fd the
// strategy has taken by then).
class TcpConnection::Impl final : public TcpConnection, private ConnectionIo::Owner {
 public:
  Impl(EventLoop* loop, std::string name, UniqueFd sockfd, std::optional<SocketAddress> localAddr,
       std::optional<SocketAddress> peerAddr, const SocketAddress& localFallback,
       const ConnectionLayer* layer);
  ~Impl();

  // Runs the message callback on `buffer` and settles what it leaves (see
  // ConnectionIo::Owner::onInput).
  void deliverInput(Buffer* buffer, InputKind kind, Timestamp receiveTime);
  // Reading is back on: hands the message callback what was kept meanwhile,
  // a slice at a time (ConnectionInput::resume), then reads again.
  void resumeInput();

  // Runs a user callback. If it throws, logs it at ERROR with this
  // connection's name and `what`, and returns false: the caller closes the
  // connection (see "Callbacks that throw" in docs/architecture.md).
  template <class F>
  bool callUser(const char* what, F&& callback) noexcept;
  // A user callback threw: close now, dropping unread input and queued output.
  void closeAfterThrow();

  void sendInLoop(std::string_view data);
  void sendInLoop(Buffer* buffer);
  [[nodiscard]] bool acceptsOutput() const;
  // After bytes were handed to the strategy: report a failed write, fire
  // the high-water mark or write-complete callbacks, apply back-pressure.
  void afterWrite(int err, size_t bufferedBefore);
  void queueWriteComplete();
  void handleClose();
  void shutdownInLoop();
  // Reading stops when the first reason appears and resumes (kept input
  // first) when the last goes away.
  void blockRead(ReadBlock why);
  void unblockRead(ReadBlock why);
  // After output was queued / written: apply or lift back-pressure.
  void checkOutputLimit();
  // Runs the connection (up) callback (once the strategy is ready()).
  void announce();
  // Runs the (down) callback if the (up) one ran, then tells the attachment.
  void announceClosed();
  // A failed call: DEBUG when the peer or the network caused it
  // (Socket::isPeerError), ERROR otherwise.
  void logIoError(const char* call, int err) const;
  [[nodiscard]] static const char* stateName(State state);
  // The strategy: the layer's (TLS), or the loop's backend's, built in
  // strategyStorage_ when it fits.
  [[nodiscard]] ConnectionIo::Ptr makeIo(EventLoop* loop, const ConnectionLayer* layer);

  ConnectionSocket socket_;
  ConnectionInput input_;
  // Touched whenever bytes arrive or queued output moves, when set
  // (TcpServer's idle timeout); one branch when not.
  TimingWheel* idleWheel_ = nullptr;
  TimingWheel::Entry idleEntry_ = TimingWheel::kNoEntry;
  // Where the backend's strategy is built (ConnectionIo::Room): both
  // backends' fit, so a connection is one allocation.
  alignas(std::max_align_t) unsigned char strategyStorage_[ConnectionIo::Room::kConnectionRoom];
  ConnectionIo::Ptr io_;  // after its room and the buffers it hands input to

 private:
  // The loop's, which input storage is lent from and given back to.
  [[nodiscard]] BufferPool& pool() const;
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
  [[nodiscard]] UniqueFd onReleased() override { return socket_.releaseFd(); }
  void onReady() override;
  void onLayerFailure(std::string_view reason) override;
};

}  // namespace libnet
