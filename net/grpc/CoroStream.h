// grpc::CoroStream<Req, Resp>: one call as a coroutine handler sees it
// (Service::addCoroMethod, defined here). The coroutine is spawned on the
// call's loop (coro::spawn) when the call begins (unary and server
// streaming: once its one request has arrived, request()), runs there only,
// and is stopped when the call is cancelled (the client's RST_STREAM, its
// connection gone, the deadline, the drain deadline): the operation it is
// suspended on ends, as every one it starts afterwards does, and
// coro::withTimeout / coro::withStop scopes inside it work as anywhere. The
// Status it returns finishes the call; a coroutine that throws finishes it
// INTERNAL. The call's cancel callback is the coroutine's stop: a coroutine
// handler learns of cancellation from its operations (or cancelled()), and
// must not set one of its own.
//
//   coro::Task<grpc::Status> sayHello(grpc::CoroStream<HelloRequest, HelloReply>& stream) {
//     HelloReply reply;
//     reply.set_message("Hello " + stream.request().name());
//     co_await stream.write(reply);
//     co_return grpc::Status();
//   }
//
// read(): the client's next message, or nullopt at its end (half-close), when
// the call is over, or when a message does not parse (the call then ends
// INTERNAL). The client is held back by flow control while no read waits:
// one message is taken ahead at most. write(): true once the message is
// queued; it waits while more than the writer's highWater is queued for the
// client; false once the call is over. Loop thread (the coroutine's).
#pragma once

#include <coroutine>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "net/coro/Operation.h"
#include "net/coro/Task.h"
#include "net/grpc/Service.h"

namespace libnet::grpc {

namespace detail {

// The untyped side of a CoroStream: the messages taken from the call and the
// operations waiting on it.
class CoroCall : public std::enable_shared_from_this<CoroCall> {
 public:
  explicit CoroCall(ServerCallPtr call) : call_(std::move(call)) {}
  // Takes the call's messages and its end (streaming kinds).
  void listen();

  class Read;
  class Write;
  [[nodiscard]] ServerCall& call() const { return *call_; }
  [[nodiscard]] const ServerCallPtr& callPtr() const { return call_; }

 private:
  void onMessage(std::string message);
  void onEnd();

  ServerCallPtr call_;
  std::deque<std::string> messages_;
  bool ended_ = false;
  Read* reader_ = nullptr;  // the read waiting, if any
};

// co_await: the next message's bytes, or nullopt.
class CoroCall::Read : public coro::detail::Operation {
 public:
  explicit Read(std::shared_ptr<CoroCall> call) : call_(std::move(call)) {}
  Read(Read&& other) noexcept : call_(std::move(other.call_)) {}
  Read& operator=(Read&&) = delete;
  ~Read();

  [[nodiscard]] bool await_ready();
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] std::optional<std::string> await_resume() { return std::move(message_); }

 private:
  friend class CoroCall;
  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);
  void cancel(coro::Errc why) override;
  void deliver(std::optional<std::string> message);

  std::shared_ptr<CoroCall> call_;
  std::optional<std::string> message_;
  bool waiting_ = false;
};

// co_await: whether the message was queued.
class CoroCall::Write : public coro::detail::Operation {
 public:
  Write(std::shared_ptr<CoroCall> call, std::string message)
      : call_(std::move(call)), message_(std::move(message)) {}
  Write(Write&& other) noexcept
      : call_(std::move(other.call_)), message_(std::move(other.message_)) {}
  Write& operator=(Write&&) = delete;
  ~Write();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] bool await_resume() const noexcept { return ok_; }

 private:
  struct Slot {
    Write* awaiter = nullptr;
  };
  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);
  void cancel(coro::Errc why) override;
  void resume(bool ok);

  std::shared_ptr<CoroCall> call_;
  std::string message_;
  bool ok_ = false;
  std::shared_ptr<Slot> slot_;
};

// Spawns `task` on the call's loop, stopped when the call is cancelled.
void spawnCall(const ServerCallPtr& call, coro::Task<> task);

// The coroutine that runs a handler and finishes the call with its Status.
template <class Stream, class Handler>
coro::Task<> runCall(std::shared_ptr<Stream> stream, Handler handler) {
  Status status;
  bool failed = false;
  try {
    status = co_await handler(*stream);
  } catch (...) {
    // Anything thrown (an int too) fails this call only.
    failed = true;
  }
  if (failed) status = Status(StatusCode::kInternal, "the handler failed");
  stream->call().finish(std::move(status));
}

}  // namespace detail

template <class Req, class Resp>
class CoroStream {
 public:
  explicit CoroStream(ServerCallPtr call)
      : core_(std::make_shared<detail::CoroCall>(std::move(call))) {}

  // Metadata, deadline, peer, loop; trailing metadata, compression.
  [[nodiscard]] ServerCall& call() const { return core_->call(); }
  // The request of a unary or server-streaming method.
  [[nodiscard]] const Req& request() const { return *request_; }

  // Client and bidi streaming (see the file comment).
  class ReadAwaiter {
   public:
    explicit ReadAwaiter(detail::CoroCall::Read read) : read_(std::move(read)) {}
    [[nodiscard]] bool await_ready() { return read_.await_ready(); }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> awaiting) {
      return read_.await_suspend(awaiting);
    }
    std::optional<Req> await_resume() {
      std::optional<std::string> bytes = read_.await_resume();
      if (!bytes) return std::nullopt;
      Req message;
      if (!message.ParseFromString(*bytes)) {
        call_->finish(Status(StatusCode::kInternal, "failed to parse a request message"));
        return std::nullopt;
      }
      return message;
    }

   private:
    friend class CoroStream;
    detail::CoroCall::Read read_;
    ServerCallPtr call_;
  };
  [[nodiscard]] ReadAwaiter read() {
    ReadAwaiter awaiter{detail::CoroCall::Read(core_)};
    awaiter.call_ = core_->callPtr();
    return awaiter;
  }
  [[nodiscard]] detail::CoroCall::Write write(const Resp& message) {
    return detail::CoroCall::Write(core_, message.SerializeAsString());
  }

  // The server's side.
  void setRequest(Req request) { request_.emplace(std::move(request)); }
  void listen() { core_->listen(); }

 private:
  std::shared_ptr<detail::CoroCall> core_;
  std::optional<Req> request_;
};

template <class Req, class Resp>
void Service::addCoroMethod(std::string_view name, MethodKind kind,
                            std::function<coro::Task<Status>(CoroStream<Req, Resp>&)> handler) {
  using Stream = CoroStream<Req, Resp>;
  addRawMethod(name, kind, [kind, handler = std::move(handler)](ServerCallPtr call) {
    auto stream = std::make_shared<Stream>(call);
    if (!takesOneRequest(kind)) {
      stream->listen();
      detail::spawnCall(call, detail::runCall(std::move(stream), handler));
      return;
    }
    awaitOneRequest(call, [call, stream, handler](std::string bytes) {
      Req request;
      if (!request.ParseFromString(bytes)) {
        call->finish(Status(StatusCode::kInternal, "failed to parse the request message"));
        return;
      }
      stream->setRequest(std::move(request));
      detail::spawnCall(call, detail::runCall(stream, handler));
    });
  });
}

}  // namespace libnet::grpc
