// grpc::Http2ServerCall: the ServerCall of one gRPC call on an HTTP/2 stream
// (ServerCall.h has the contract). grpc::Server makes one per request whose
// route it took (a POST with content-type application/grpc), on the
// connection's loop, from the request's head, its http::ResponseWriter and
// the writer's RequestBody.
//
// Every piece of state lives on the loop: the answer-side members, callable
// from any thread, carry their work there (EventLoop::runInLoop: at once on
// the loop's own thread, else through its queue, so one thread's calls keep
// their order). Only what a caller must see at once is atomic: cancelled(),
// whether the call is over, and the bytes on their way for write()'s
// back-pressure.
//
// Lifetimes: the call holds the writer and the body; their callbacks, the
// deadline timer and the work queued to the loop hold the call weakly or
// for one run. The handler gets handle(): a pointer whose last copy going
// finishes an unfinished call INTERNAL ("handler dropped the call"). The
// callbacks the handler sets are let go once they cannot run any more (the
// call over, the client's end delivered), so that a callback that holds the
// handler's pointer does not keep the call forever.
//
// Requests: the body's pieces go through a MessageReader; messages decoded
// and not yet delivered (no message callback yet, or paused) stop the body,
// so a call holds at most one stream window and what one piece completes.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/TimerId.h"
#include "net/grpc/CallOptions.h"
#include "net/grpc/MessageReader.h"
#include "net/grpc/ServerCall.h"
#include "net/http/HttpRequest.h"
#include "net/http/ResponseWriter.h"

namespace libnet::grpc {

class Http2ServerCall final : public ServerCall,
                              public std::enable_shared_from_this<Http2ServerCall> {
 public:
  // The answer to a request refused before any handler runs: `status` as a
  // trailers-only answer (with grpc-accept-encoding). Any thread.
  static void refuse(const http::ResponseWriterPtr& writer, const Status& status);

  // On the loop, with the request's head: the call, or nullopt with the
  // status it was refused with (answered already: malformed metadata or
  // grpc-timeout, an unsupported grpc-encoding).
  static std::shared_ptr<Http2ServerCall> make(const CallOptions& options,
                                               const http::HttpRequest& head, std::string method,
                                               http::ResponseWriterPtr writer);

  Http2ServerCall(const CallOptions& options, std::string method, http::ResponseWriterPtr writer);
  Http2ServerCall(const Http2ServerCall&) = delete;
  Http2ServerCall& operator=(const Http2ServerCall&) = delete;

  // The pointer the handler gets (see the file comment).
  [[nodiscard]] ServerCallPtr handle();
  // Runs `handler` with handle(): a throw finishes the call INTERNAL. Loop.
  void run(const std::function<void(ServerCallPtr)>& handler);

  [[nodiscard]] const std::string& method() const override { return method_; }
  [[nodiscard]] const Metadata& clientMetadata() const override { return metadata_; }
  [[nodiscard]] std::optional<MonoTime> deadline() const override { return deadline_; }
  [[nodiscard]] const InetAddress& peer() const override { return peer_; }
  [[nodiscard]] EventLoop* loop() const override { return loop_; }

  void setMessageCallback(std::function<void(std::string message)> callback) override;
  void setHalfCloseCallback(std::function<void()> callback) override;
  void pauseReading() override;
  void resumeReading() override;
  [[nodiscard]] bool lastMessageCompressed() const override { return lastCompressed_; }

  void addInitialMetadata(std::string key, std::string value) override;
  void addTrailingMetadata(std::string key, std::string value) override;
  void setCompression(bool gzip) override;
  bool write(std::string message) override;
  void setWritableCallback(std::function<void()> callback) override;
  void finish(Status status) override;

  [[nodiscard]] bool cancelled() const override {
    return cancelled_.load(std::memory_order_acquire);
  }
  void setCancelCallback(std::function<void()> callback) override;

  // Whether the answer is over (finished or cancelled). Any thread.
  [[nodiscard]] bool over() const { return over_.load(std::memory_order_acquire); }

 private:
  // The head: metadata, grpc-timeout, grpc-encoding. Not OK: refuse with it.
  Status parseHead(const http::HttpRequest& head);
  Status parseMetadata(const http::HttpRequest& head);
  // The writer's and the body's callbacks, the deadline's timer.
  void begin();

  // Loop thread.
  void onData(std::string_view piece);
  void onBodyEnd(bool complete);
  // Hands waiting messages to the message callback, and the end to the
  // half-close callback, while not paused; the body reads on once none wait.
  void deliver();
  void onDeadline();
  // The server ends the call with `status` (a limit, a malformed request,
  // the deadline, a handler that threw): for the handler, a cancellation.
  void failInLoop(Status status);
  // The client went (reset, closed) or the deadline passed: once.
  void cancelInLoop();
  void writeInLoop(std::string message);
  void runWritable();
  void finishInLoop(Status status);
  [[nodiscard]] http::HttpResponse head();
  // The call is over: its callbacks and its timer go.
  void release();
  // Runs a callback of the handler's: a throw finishes the call INTERNAL.
  void guarded(const char* what, const std::function<void()>& callback);
  template <class Fn>
  void inLoop(Fn&& fn);

  const CallOptions options_;
  const std::string method_;
  const http::ResponseWriterPtr writer_;
  const http::RequestBodyPtr body_;
  EventLoop* const loop_;
  Metadata metadata_;
  std::optional<MonoTime> deadline_;
  InetAddress peer_;
  std::string encoding_;  // the client's grpc-encoding
  bool acceptsGzip_ = false;

  std::atomic<bool> cancelled_{false};
  std::atomic<bool> over_{false};
  std::atomic<bool> finishAsked_{false};  // finish() was called (once counts)
  std::atomic<bool> compress_{false};
  std::atomic<bool> wantWritable_{false};
  // write()'s messages on their way to the loop.
  std::atomic<size_t> inFlight_{0};

  // Loop thread only.
  std::optional<MessageReader> reader_;
  std::deque<std::string> waiting_;     // decoded, not yet delivered
  std::deque<bool> waitingCompressed_;  // each of waiting_'s compressed flags
  bool lastCompressed_ = false;         // the message delivered last
  bool paused_ = false;
  bool bodyPaused_ = false;
  bool bodyEnded_ = false;
  bool halfCloseDone_ = false;
  bool headSent_ = false;
  bool gzipOut_ = false;  // the head announced grpc-encoding gzip
  bool cancelRun_ = false;
  std::optional<TimerId> timer_;
  Metadata initial_;
  Metadata trailing_;
  std::function<void(std::string)> messageCallback_;
  std::function<void()> halfCloseCallback_;
  std::function<void()> writableCallback_;
  std::function<void()> cancelCallback_;
};

}  // namespace libnet::grpc
