// grpc::ClientCall: one call on a Channel, untyped (messages are bytes):
// the request side (write(), halfClose()), the response side (initial
// metadata, messages, the final Status with trailing metadata) and cancel().
// The typed streams (ClientStream.h, CoroClient.h) and the generated stubs
// are built on it.
//
//   auto call = grpc::ClientCall::start(channel, "/helloworld.Greeter/SayHello", {}, {
//       .onMessage = [](std::string bytes) { ... },
//       .onFinish = [](const grpc::Status& s, const grpc::Metadata& trailers) { ... }});
//   call->write(request.SerializeAsString());
//   call->halfClose();
//
// Every callback runs on the channel's loop; onFinish runs exactly once,
// last, and then the call lets go of every callback. The response is never
// trusted: messages are de-framed by a MessageReader bounded by the
// channel's maxReceiveMessageBytes (past it: RESOURCE_EXHAUSTED, the stream
// cancelled); a response without grpc-status, with a :status other than
// 200 (mapped as gRPC's doc/http-grpc-status-mapping.md says), with a
// content-type that is not application/grpc, or cut off mid-message ends
// with the code gRPC gives it; a stream reset ends CANCELLED (CANCEL),
// UNAVAILABLE (REFUSED_STREAM, the connection lost), RESOURCE_EXHAUSTED
// (ENHANCE_YOUR_CALM) or INTERNAL.
//
// Deadline: grpc-timeout is sent with what is left of it, and a timer on
// the loop ends the call DEADLINE_EXCEEDED (RST_STREAM CANCEL) when it
// passes, whatever the server does.
//
// Flow control: pause() stops handing messages over and stops granting the
// response's window (the server is held to one stream window); resume()
// goes on. Back-pressure: write() returns false once the call's queued
// output reaches Channel::Options::writeHighWater; onWritable runs when it
// has drained (the message is queued either way).
//
// write(), halfClose(), cancel(), pause(), resume() from any thread (carried
// to the loop in the order each thread calls them).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "net/TimerId.h"
#include "net/grpc/ClientCallOptions.h"
#include "net/grpc/MessageReader.h"
#include "net/grpc/Metadata.h"
#include "net/grpc/Status.h"
#include "net/http2/ClientConnection.h"

namespace libnet::grpc {

class Channel;

class ClientCall : public std::enable_shared_from_this<ClientCall> {
 public:
  struct Callbacks {
    // The server's initial metadata (custom keys only, "-bin" decoded).
    // Not called for a trailers-only response.
    std::function<void(const Metadata& metadata)> onInitialMetadata{};
    // Each response message (decompressed).
    std::function<void(std::string message)> onMessage{};
    // Exactly once, last.
    std::function<void(const Status& status, const Metadata& trailers)> onFinish{};
    // The queued output fell below the low mark after write() said false.
    std::function<void()> onWritable{};
  };

  // Starts the call (any thread): it waits for the channel's connection if
  // needed. `path`: "/package.Service/Method".
  [[nodiscard]] static std::shared_ptr<ClientCall> start(std::shared_ptr<Channel> channel,
                                                         std::string path,
                                                         ClientCallOptions options,
                                                         Callbacks callbacks);
  ~ClientCall();
  ClientCall(const ClientCall&) = delete;
  ClientCall& operator=(const ClientCall&) = delete;

  // One request message. True while the queued output is below the high
  // mark; false past it (queued anyway: wait for onWritable) or when the
  // call is over (dropped). `noCompression`: this message goes plain on a
  // call that compresses (ClientCallOptions::compress).
  bool write(std::string message, bool noCompression = false);
  // No more request messages.
  void halfClose();
  // Ends the call CANCELLED (RST_STREAM CANCEL) unless it is over already.
  void cancel();
  // The same, ending it with `status` (a response that does not parse:
  // INTERNAL; a coroutine's timeout: DEADLINE_EXCEEDED).
  void cancel(Status status);
  void pause();
  void resume();

  // Any thread: the call is over (onFinish has run or is about to).
  [[nodiscard]] bool finished() const { return done_.load(std::memory_order_acquire); }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::shared_ptr<Channel>& channel() const { return channel_; }
  [[nodiscard]] bool waitForReady() const { return options_.waitForReady; }

  // Channel's side, loop thread.
  // The connection is up: submit the stream on it.
  void attach(const std::shared_ptr<http2::ClientConnection>& conn);
  // No connection for it: ends the call with `status`.
  void fail(Status status) { finishWith(std::move(status), {}); }

 private:
  ClientCall(std::shared_ptr<Channel> channel, std::string path, ClientCallOptions options,
             Callbacks callbacks);
  template <class F>
  void inLoop(F&& fn);
  void startInLoop();
  void writeInLoop(std::string message, bool noCompression);
  void halfCloseInLoop();
  void cancelInLoop(Status status);
  void pauseInLoop();
  void resumeInLoop();
  [[nodiscard]] http2::ClientSession::Fields requestFields() const;
  [[nodiscard]] http2::ClientSession::StreamCallbacks streamCallbacks();
  void onHead(int status, const http2::ClientSession::Fields& fields);
  void onData(std::string_view data);
  void onTrailers(const http2::ClientSession::Fields& fields);
  void onClose(const http2::ClientSession::Close& close);
  void onStreamWritable();
  void deliver();
  void finishWith(Status status, Metadata trailers);
  void updateQueued();
  [[nodiscard]] std::optional<std::string> frame(std::string message, bool compress);

  const std::shared_ptr<Channel> channel_;
  const std::string path_;
  const ClientCallOptions options_;
  Callbacks callbacks_;
  std::atomic<bool> done_{false};
  // Bytes handed to write() not yet on the loop, plus the stream's queue.
  std::atomic<size_t> inTransit_{0};
  std::atomic<size_t> queued_{0};
  std::atomic<bool> wantWritable_{false};

  // Loop thread from here on.
  std::optional<MonoTime> deadline_;
  TimerId deadlineTimer_;
  std::shared_ptr<http2::ClientConnection> conn_;
  http2::ClientConnection::StreamKey key_ = 0;
  std::string pendingOutput_;  // framed before the stream exists
  // The output sent so far, kept (up to a bound) until the server answers,
  // for one transparent retry of a stream refused unprocessed.
  std::string replay_;
  bool replayable_ = true;
  bool halfClosed_ = false;
  bool retried_ = false;
  bool streamClosed_ = false;
  int httpStatus_ = 0;
  bool paused_ = false;
  bool sawHead_ = false;
  std::optional<MessageReader> reader_;
  std::optional<Status> finalStatus_;  // known, waiting for messages to drain
  Metadata trailers_;
  std::deque<std::string> messages_;
  bool delivering_ = false;
};

}  // namespace libnet::grpc
