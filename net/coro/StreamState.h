// StreamState: the coroutine layer's state for one connection: where its
// unread input is, and the operations suspended on it (at most one read, one
// write and one wait for the close). Attached to the TcpConnection
// (ConnectionAttachment), which owns it, so it lives exactly as long as the
// connection; a Stream holds the connection and so keeps it alive.
//
// The connection's message callback resumes a suspended read inline, on the
// bytes just delivered: on io_uring that is a view of the buffer ring, on
// epoll the loop's scratch buffer, so a read that is satisfied at once costs
// no copy and no allocation. Whatever the coroutine leaves unread when it
// next suspends, the connection keeps (ConnectionInput::settle), and
// input() points there from then on. Loop thread only. Part of the layer's
// inside; applications use Stream.
#pragma once

#include <cstddef>
#include <memory>
#include <stop_token>

#include "net/ConnectionAttachment.h"
#include "net/TcpConnection.h"
#include "net/coro/StreamOptions.h"
#include "net/coro/TaskContext.h"

namespace libnet::coro {

class ClosedAwaiter;
class ReadAwaiter;
class WriteAwaiter;

class StreamState final : public ConnectionAttachment {
 public:
  explicit StreamState(TcpConnection* conn) : conn_(conn) {}

  // Attaches a new state to `conn` (loop thread, before its first byte is
  // delivered) and takes over its message callback; or returns the one
  // attached already. Either way the stream is bounded by `options` from
  // now on.
  static StreamState* attach(const TcpConnectionPtr& conn, const StreamOptions& options);

  [[nodiscard]] TcpConnection* connection() const { return conn_; }
  // The unread input: the bytes being delivered, or the connection's buffer.
  [[nodiscard]] Buffer& input() const { return delivering_ ? *delivering_ : *conn_->inputBuffer(); }
  // How the stream has ended so far: kClosed, kEof (the peer half-closed),
  // or kOk (still open both ways).
  [[nodiscard]] Errc end() const {
    if (closed_) return Errc::kClosed;
    return peerClosed_ ? Errc::kEof : Errc::kOk;
  }

  // The operations' side.
  void setReader(ReadAwaiter* reader);
  void clearReader(const ReadAwaiter* reader) {
    if (reader_ == reader) reader_ = nullptr;
  }
  void setWriter(WriteAwaiter* writer) { writer_ = writer; }
  // A file was handed to the connection (sendFile()).
  void noteFileQueued() { ++filesQueued_; }
  // Whether a writer may go on: the queued output is within the
  // connection's maxQueuedOutput() (`resuming`: within half of it, as for
  // the connection's reading), and fewer files than maxQueuedFiles are
  // queued. Each queued file holds an fd until it is sent, so files are
  // bounded by number as well as by bytes (a hundred-byte file costs as much
  // fd as a huge one).
  [[nodiscard]] bool outputWithinLimits(bool resuming);
  void clearWriter(const WriteAwaiter* writer) {
    if (writer_ == writer) writer_ = nullptr;
  }
  void setClosedWaiter(ClosedAwaiter* waiter);
  void clearClosedWaiter(const ClosedAwaiter* waiter) {
    if (closedWaiter_ == waiter) closedWaiter_ = nullptr;
  }
  // Whether bytes arrived that no read has reported to the coroutine: they
  // came while it was suspended on something else (a write under
  // back-pressure, a timer), so it has not seen them even though they are
  // unread. A read that ends with kOk reports all of them.
  [[nodiscard]] bool hasUnseenInput() const { return unseenInput_; }
  void noteInputSeen() { unseenInput_ = false; }
  // The Stream is gone: input is dropped from now on.
  void detach() { detached_ = true; }
  // The context of the connection's own task (serve()): here rather than in
  // the task's root frame, so that a message touches one object less.
  [[nodiscard]] TaskContext* taskContext() { return &taskContext_; }

  [[nodiscard]] const StreamOptions& options() const { return options_; }

  // Graceful drain: requested when the connection's server drains
  // (serve()). The token's shared state is made when the token is first
  // asked for (a std::stop_source allocates it at once, and most
  // connections never ask): one asked for after the drain began is stopped
  // already.
  [[nodiscard]] std::stop_token drainToken();
  void requestDrain();

  // ConnectionAttachment.
  void onPeerHalfClosed() override;
  void onClosed() override;
  void onOutputDrained() override;
  void onOutputProgress() override;

 private:
  void setOptions(const StreamOptions& options);
  void onMessage(Buffer* buffer);
  void resumeWriter();
  // resumeWriter() from the loop's queue, once.
  void queueResume();

  TcpConnection* conn_;  // the owner
  StreamOptions options_;
  Buffer* delivering_ = nullptr;
  ReadAwaiter* reader_ = nullptr;
  WriteAwaiter* writer_ = nullptr;
  ClosedAwaiter* closedWaiter_ = nullptr;
  bool peerClosed_ = false;
  bool closed_ = false;
  bool detached_ = false;
  bool stoppedRead_ = false;  // we stopped reading: input is over maxInput
  bool drainQueued_ = false;  // resumeWriter() is queued
  bool unseenInput_ = false;  // see hasUnseenInput()
  // Files handed over since the connection's output was last empty: at
  // least as many as it still holds open.
  size_t filesQueued_ = 0;
  bool drainRequested_ = false;
  TaskContext taskContext_{nullptr};
  std::stop_source drainStop_{std::nostopstate};
};

}  // namespace libnet::coro
