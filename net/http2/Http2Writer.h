// http2::Http2Writer: the ResponseWriter of one HTTP/2 stream answered by the
// HttpServer's AsyncHandler (ResponseWriter.h has the contract). The session
// makes it when the stream's request is complete and hands it to the
// handler; the writer reaches the session on the connection's loop through
// the server's WriterGate, finding the session through a token that dies
// with it and the stream by its id (ids are never reused), so a writer kept
// past its stream or its connection finds nothing and does nothing.
//
// The body goes out as DATA frames as it is written (nghttp2's deferred data
// provider, resumed by each write), END_STREAM at finish(), or on a HEADERS
// frame of trailers after the last DATA at finish(trailers);
// respondTrailersOnly() is one HEADERS frame with END_STREAM. abort() (or a
// writer dropped unfinished) resets the stream with INTERNAL_ERROR, or
// answers 500 when nothing was sent yet; reset(code) resets it with `code`,
// after the answer if that is complete. Back-pressure: the bytes written
// and not yet framed (held by the stream's window, the connection's window,
// or the connection's output limit) past highWater make write() false; the
// writable callback runs when they are down to lowWater.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/http/HttpResponse.h"
#include "net/http/ResponseWriter.h"

namespace libnet::http {
class WriterGate;
}

namespace libnet::http2 {

class ServerSession;

class Http2Writer final : public http::ResponseWriter,
                          public std::enable_shared_from_this<Http2Writer> {
 public:
  // What finds the session while it exists (ServerSession::anchor()).
  using Anchor = std::weak_ptr<ServerSession*>;

  Http2Writer(std::shared_ptr<http::WriterGate> gate, EventLoop* loop, Anchor session,
              int32_t stream, Options options);
  ~Http2Writer() override;
  Http2Writer(const Http2Writer&) = delete;
  Http2Writer& operator=(const Http2Writer&) = delete;

  void respond(http::HttpResponse response) override;
  void start(http::HttpResponse head) override;
  bool write(std::string data) override;
  void finish() override;
  void finish(std::vector<std::pair<std::string, std::string>> trailers) override;
  void abort() override;
  void respondTrailersOnly(http::HttpResponse head) override;
  void reset(uint32_t http2ErrorCode) override;
  void setWritableCallback(std::function<void()> callback) override;
  void setClosedCallback(std::function<void()> callback) override;
  [[nodiscard]] bool closed() const override { return closed_.load(std::memory_order_acquire); }
  [[nodiscard]] size_t queuedBytes() const override;
  [[nodiscard]] EventLoop* loop() const override { return loop_; }
  [[nodiscard]] http::RequestBodyPtr requestBody() const override { return body_; }

  // Before the writer is handed to the handler: the body streamed to it
  // (HttpServer::Route::kStreamedBody).
  void setRequestBody(http::RequestBodyPtr body) { body_ = std::move(body); }

  // The session's side, on the loop.
  [[nodiscard]] bool ended() const { return ended_.load(std::memory_order_acquire); }
  [[nodiscard]] bool started() const { return started_; }
  // The answer is over from the writer's side (the session frames the rest).
  void markEnded() { ended_.store(true, std::memory_order_release); }
  void markStarted() { started_ = true; }
  // Bytes framed: `unsent` still wait in the stream.
  void onProgress(size_t unsent);
  // The stream closed before its answer was complete (RST_STREAM from the
  // client, the connection gone): the closed callback, once.
  void onStreamClosed();

 private:
  [[nodiscard]] ServerSession* session() const;
  // The answer is over from this side: its callbacks go.
  void endAnswer();
  // The stream holds `unsent` bytes, `taken` of which were on their way.
  void seen(size_t unsent, size_t taken);
  void checkWritable();
  void runClosedCallback();

  const std::shared_ptr<http::WriterGate> gate_;
  EventLoop* const loop_;
  const Anchor session_;
  const int32_t stream_;
  const Options options_;
  http::RequestBodyPtr body_;  // set before the handler has the writer

  std::atomic<bool> ended_{false};
  std::atomic<bool> closed_{false};
  std::atomic<bool> wantWritable_{false};
  // Written and not yet framed: on the way to the loop, plus what the
  // stream holds as last seen (lastUnsent_).
  std::atomic<size_t> queued_{0};

  // Loop thread only.
  size_t lastUnsent_ = 0;
  bool started_ = false;
  bool clientGone_ = false;
  bool closedCalled_ = false;
  bool reset_ = false;  // reset() has been done
  std::function<void()> writable_;
  std::function<void()> closedCallback_;
};

}  // namespace libnet::http2
