#include "net/http2/Http2Writer.h"

#include <utility>

#include "base/Guarded.h"
#include "net/EventLoop.h"  // EventLoop* is an EventLoopBase*
#include "net/http/WriterGate.h"
#include "net/http2/ServerSession.h"

namespace libnet::http2 {

Http2Writer::Http2Writer(std::shared_ptr<http::WriterGate> gate, EventLoop* loop, Anchor session,
                         int32_t stream, Options options)
    : gate_(std::move(gate)),
      loop_(loop),
      session_(std::move(session)),
      stream_(stream),
      options_(options) {}

Http2Writer::~Http2Writer() {
  if (ended() || !gate_ || loop_ == nullptr) return;
  // Every call posted held this writer: all of them have run. Queued even
  // on the loop: the last owner may let go inside the session's own work.
  gate_->queue(loop_, [anchor = session_, id = stream_] {
    const std::shared_ptr<ServerSession*> held = anchor.lock();
    if (held && *held != nullptr) (*held)->writerAbort(id);
  });
}

ServerSession* Http2Writer::session() const {
  const std::shared_ptr<ServerSession*> held = session_.lock();
  return held ? *held : nullptr;
}

size_t Http2Writer::queuedBytes() const { return queued_.load(std::memory_order_relaxed); }

void Http2Writer::respond(http::HttpResponse response) {
  gate_->run(loop_, [self = shared_from_this(), r = std::move(response)]() mutable {
    ServerSession* s = self->session();
    if (self->ended() || self->started_ || s == nullptr) return;
    self->endAnswer();
    s->writerRespond(self->stream_, std::move(r));
  });
}

void Http2Writer::start(http::HttpResponse head) {
  gate_->run(loop_, [self = shared_from_this(), h = std::move(head)]() mutable {
    ServerSession* s = self->session();
    if (self->ended() || self->started_ || s == nullptr) return;
    self->started_ = true;
    s->writerStart(self->stream_, std::move(h));
  });
}

bool Http2Writer::write(std::string data) {
  if (closed()) return false;
  const size_t size = data.size();
  queued_.fetch_add(size, std::memory_order_relaxed);
  const bool open = gate_->run(loop_, [self = shared_from_this(), d = std::move(data)]() mutable {
    const size_t size = d.size();
    ServerSession* s = self->session();
    if (self->ended() || !self->started_ || s == nullptr) {
      self->queued_.fetch_sub(size, std::memory_order_relaxed);
      return;
    }
    const size_t unsent = s->writerWrite(self->stream_, std::move(d));
    self->seen(unsent, size);
    if (self->options_.maxQueued != 0 && unsent > self->options_.maxQueued) {
      // It ignored back-pressure: the client is too slow for it.
      self->closed_.store(true, std::memory_order_release);
      self->clientGone_ = true;
      self->endAnswer();
      s->writerAbort(self->stream_);
      self->runClosedCallback();
    }
  });
  if (!open) {
    queued_.fetch_sub(size, std::memory_order_relaxed);
    return false;
  }
  if (closed()) return false;
  if (queuedBytes() <= options_.highWater) return true;
  wantWritable_.store(true, std::memory_order_release);
  gate_->run(loop_, [self = shared_from_this()] { self->checkWritable(); });
  return false;
}

void Http2Writer::finish() { finish({}); }

void Http2Writer::finish(std::vector<std::pair<std::string, std::string>> trailers) {
  gate_->run(loop_, [self = shared_from_this(), t = std::move(trailers)]() mutable {
    ServerSession* s = self->session();
    if (self->ended() || !self->started_ || s == nullptr) return;
    self->endAnswer();
    s->writerFinish(self->stream_, std::move(t));
  });
}

void Http2Writer::respondTrailersOnly(http::HttpResponse head) {
  gate_->run(loop_, [self = shared_from_this(), h = std::move(head)]() mutable {
    ServerSession* s = self->session();
    if (self->ended() || self->started_ || s == nullptr) return;
    self->endAnswer();
    s->writerRespondHeadersOnly(self->stream_, std::move(h));
  });
}

void Http2Writer::reset(uint32_t http2ErrorCode) {
  gate_->run(loop_, [self = shared_from_this(), http2ErrorCode] {
    ServerSession* s = self->session();
    if (self->reset_ || self->closed() || s == nullptr) return;
    self->reset_ = true;
    // A complete answer goes out first; one under way is cut off now.
    const bool complete = self->ended();
    if (!complete) {
      self->endAnswer();
      self->closed_.store(true, std::memory_order_release);
    }
    s->writerReset(self->stream_, http2ErrorCode, complete);
  });
}

void Http2Writer::abort() {
  gate_->run(loop_, [self = shared_from_this()] {
    ServerSession* s = self->session();
    if (self->ended() || s == nullptr) return;
    self->endAnswer();
    self->closed_.store(true, std::memory_order_release);
    s->writerAbort(self->stream_);
  });
}

void Http2Writer::setWritableCallback(std::function<void()> callback) {
  gate_->run(loop_, [self = shared_from_this(), cb = std::move(callback)]() mutable {
    if (!self->ended()) self->writable_ = std::move(cb);
  });
}

void Http2Writer::setClosedCallback(std::function<void()> callback) {
  gate_->run(loop_, [self = shared_from_this(), cb = std::move(callback)]() mutable {
    if (self->ended() && !self->clientGone_) return;
    self->closedCallback_ = std::move(cb);
    if (self->clientGone_) self->runClosedCallback();
  });
}

void Http2Writer::endAnswer() {
  markEnded();
  // The callbacks often hold this writer: let them go once they cannot run.
  writable_ = nullptr;
  if (!clientGone_) closedCallback_ = nullptr;
}

void Http2Writer::seen(size_t unsent, size_t taken) {
  // One atomic step from "on its way" to "waiting in the stream": a reader
  // never sees the bytes twice, nor not at all.
  queued_.fetch_add(unsent - lastUnsent_ - taken, std::memory_order_relaxed);
  lastUnsent_ = unsent;
}

void Http2Writer::onProgress(size_t unsent) {
  seen(unsent, 0);
  if (unsent <= options_.lowWater && wantWritable_.load(std::memory_order_acquire)) {
    // Not from inside the session's output: the callback writes.
    gate_->queue(loop_, [self = shared_from_this()] { self->checkWritable(); });
  }
}

void Http2Writer::checkWritable() {
  if (ended() || closed() || queuedBytes() > options_.lowWater) return;
  if (!wantWritable_.exchange(false, std::memory_order_acq_rel) || !writable_) return;
  const std::function<void()> callback = writable_;  // it may replace itself
  if (!callGuarded("writable callback", callback)) abort();
}

void Http2Writer::onStreamClosed() {
  closed_.store(true, std::memory_order_release);
  writable_ = nullptr;
  if (ended()) {
    closedCallback_ = nullptr;
    return;
  }
  markEnded();
  clientGone_ = true;
  runClosedCallback();
}

void Http2Writer::runClosedCallback() {
  if (closedCalled_ || !closedCallback_) return;
  closedCalled_ = true;
  const std::function<void()> callback = std::move(closedCallback_);
  callGuarded("closed callback", callback);
}

}  // namespace libnet::http2
