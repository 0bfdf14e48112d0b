#include "net/coro/StreamState.h"

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/coro/ClosedAwaiter.h"
#include "net/coro/ReadAwaiter.h"
#include "net/coro/WriteAwaiter.h"

namespace libnet::coro {

StreamState* StreamState::attach(const TcpConnectionPtr& conn, const StreamOptions& options) {
  conn->loop()->assertInLoopThread();
  if (auto* existing = dynamic_cast<StreamState*>(conn->attachment())) {
    existing->setOptions(options);
    return existing;
  }
  auto state = std::make_shared<StreamState>(conn.get());
  StreamState* raw = state.get();
  raw->setOptions(options);
  // The connection owns the state, so the raw pointer lives as long as the
  // callback that holds it (and fits in std::function without allocating).
  conn->setMessageCallback(
      [raw](const TcpConnectionPtr&, Buffer* buffer, Timestamp) { raw->onMessage(buffer); });
  conn->setAttachment(std::move(state));
  return raw;
}

void StreamState::onMessage(Buffer* buffer) {
  if (detached_) {
    buffer->retrieveAll();
    return;
  }
  delivering_ = buffer;
  if (reader_ != nullptr && reader_->satisfiedBy(*buffer)) {
    // Resumes the coroutine here, on these bytes; it runs until it next
    // suspends (usually on its next read), then the connection keeps what
    // it left.
    reader_->complete();
  } else if (reader_ == nullptr && closedWaiter_ != nullptr) {
    buffer->retrieveAll();
  } else {
    // Kept for a later read, which must count them as new: a readMore()
    // that asked only for bytes beyond what is unread then would wait for
    // one that may never come (a pipelining client that has sent its last
    // request), with complete requests sitting unanswered in the buffer.
    unseenInput_ = true;
  }
  if (reader_ == nullptr && !stoppedRead_ && !closed_ &&
      buffer->readableBytes() > options_.maxInput) {
    // No one is reading: hold the peer back (TCP flow control) instead of
    // buffering without bound.
    stoppedRead_ = true;
    conn_->stopRead();
  }
  delivering_ = nullptr;
}

std::stop_token StreamState::drainToken() {
  if (!drainStop_.stop_possible()) {
    drainStop_ = std::stop_source();
    if (drainRequested_) drainStop_.request_stop();
  }
  return drainStop_.get_token();
}

void StreamState::requestDrain() {
  drainRequested_ = true;
  if (drainStop_.stop_possible()) drainStop_.request_stop();
}

void StreamState::setReader(ReadAwaiter* reader) {
  reader_ = reader;
  if (stoppedRead_) {
    stoppedRead_ = false;
    conn_->startRead();  // delivers what is buffered first, from the loop
  }
}

void StreamState::setClosedWaiter(ClosedAwaiter* waiter) {
  closedWaiter_ = waiter;
  input().retrieveAll();
  if (stoppedRead_) {
    stoppedRead_ = false;
    conn_->startRead();  // the end of input must be seen
  }
}

void StreamState::onPeerHalfClosed() {
  peerClosed_ = true;
  if (detached_) {
    conn_->closeAfterOutput();
    return;
  }
  if (ReadAwaiter* reader = reader_) reader->complete(Errc::kEof);
  if (ClosedAwaiter* waiter = closedWaiter_) waiter->complete(Errc::kEof);
}

void StreamState::onClosed() {
  closed_ = true;
  // Each may resume a coroutine that suspends on another of them.
  if (ReadAwaiter* reader = reader_) reader->complete(Errc::kClosed);
  if (WriteAwaiter* writer = writer_) writer->complete(Errc::kClosed);
  if (ClosedAwaiter* waiter = closedWaiter_) waiter->complete(Errc::kClosed);
}

void StreamState::setOptions(const StreamOptions& options) {
  options_ = options;
  if (options_.maxQueuedFiles == 0) options_.maxQueuedFiles = 1;
}

bool StreamState::outputWithinLimits(bool resuming) {
  const size_t queued = conn_->queuedOutputBytes();
  // Written at once, or drained since: no file is held any more. (A drain
  // that empties the queue is reported too, by onOutputDrained().)
  if (queued == 0) filesQueued_ = 0;
  if (filesQueued_ >= options_.maxQueuedFiles) return false;
  const size_t limit = conn_->maxQueuedOutput();
  return limit == 0 || queued <= (resuming ? limit / 2 : limit);
}

void StreamState::onOutputDrained() {
  filesQueued_ = 0;  // every queued file has been sent (and closed)
  queueResume();
}

void StreamState::onOutputProgress() {
  // A writer waits only above the limit; it goes on at half, as reading does.
  if (writer_ == nullptr || drainQueued_ || !outputWithinLimits(/*resuming=*/true)) return;
  queueResume();
}

void StreamState::queueResume() {
  // From inside the backend: the writer resumes from the loop's queue.
  if (writer_ == nullptr || drainQueued_) return;
  drainQueued_ = true;
  conn_->loop()->queueInLoop([conn = conn_->shared_from_this()] {
    static_cast<StreamState*>(conn->attachment())->resumeWriter();
  });
}

void StreamState::resumeWriter() {
  drainQueued_ = false;
  if (writer_ != nullptr && !closed_ && outputWithinLimits(/*resuming=*/true)) {
    writer_->complete(Errc::kOk);
  }
}

}  // namespace libnet::coro
