// The client's coroutine form: grpc::CoroClientStream<Req, Resp> (one call,
// any kind) and grpc::coroUnary() (a unary call as a Task<Result<Resp>>),
// which the generated stubs use:
//
//   coro::Task<> greet(Greeter::Stub& stub) {
//     grpc::Result<HelloReply> reply = co_await stub.SayHello(request, {.timeout = 2s});
//     if (!reply.ok()) LOG_WARN << reply.status().toString();
//     auto chat = stub.RouteChat();                  // a CoroClientStream
//     co_await chat.write(note);
//     chat.halfClose();
//     while (std::optional<RouteNote> in = co_await chat.read()) { ... }
//     grpc::Status status = co_await chat.finish();
//   }
//
// The stream is made on the coroutine's loop thread (the channel's or
// another: the call's events are carried to it through its queue) and used
// there only. read(): the next response message, or nullopt at the end of
// the response (or when the call is over, or a message does not parse: the
// call then ends INTERNAL); the server is held back by flow control while
// no read waits (one message taken ahead). write(): true once the message
// is queued (it waits while the call's output is past its high mark);
// false once the call is over. finish(): the call's Status, once the server
// has ended it; trailers() afterwards. A withTimeout() or withStop() scope
// that ends an operation of the stream cancels the call (RST_STREAM
// CANCEL): DEADLINE_EXCEEDED for a timeout, CANCELLED for a stop; the
// operations after it end at once. Destroying the stream before the call is
// over cancels it.
#pragma once

#include <coroutine>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "net/coro/Operation.h"
#include "net/coro/Task.h"
#include "net/grpc/ClientCall.h"
#include "net/grpc/ClientCallOptions.h"
#include "net/grpc/Metadata.h"
#include "net/grpc/Status.h"

namespace libnet {
class EventLoop;
}

namespace libnet::grpc {

class Channel;

// A reply, or why there is none.
template <class T>
class Result {
 public:
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit on purpose
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit on purpose

  [[nodiscard]] bool ok() const { return value_.has_value(); }
  [[nodiscard]] const Status& status() const { return status_; }
  [[nodiscard]] T& value() { return *value_; }
  [[nodiscard]] const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

namespace detail {

// The untyped side of a CoroClientStream: the call's events on the
// coroutine's loop, and the operations waiting on them.
class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  ClientCore() = default;
  ~ClientCore();
  ClientCore(const ClientCore&) = delete;
  ClientCore& operator=(const ClientCore&) = delete;

  void start(std::shared_ptr<Channel> channel, std::string path, ClientCallOptions options);

  class Op;
  [[nodiscard]] Op read();
  [[nodiscard]] Op write(std::string message, bool noCompression);
  [[nodiscard]] Op finish();

  [[nodiscard]] ClientCall& call() const { return *call_; }
  [[nodiscard]] const Metadata& initialMetadata() const { return initial_; }
  [[nodiscard]] const Metadata& trailers() const { return trailers_; }

 private:
  void onMetadata(Metadata metadata) { initial_ = std::move(metadata); }
  void onMessage(std::string message);
  void onFinish(Status status, Metadata trailers);
  void onWritable();

  EventLoop* loop_ = nullptr;  // the coroutine's
  std::shared_ptr<ClientCall> call_;
  std::deque<std::string> messages_;
  std::optional<Status> status_;
  Metadata initial_;
  Metadata trailers_;
  Op* reader_ = nullptr;
  Op* writer_ = nullptr;
  Op* finisher_ = nullptr;
};

class ClientCore::Op : public coro::detail::Operation {
 public:
  enum class Kind : uint8_t { kRead, kWrite, kFinish };
  Op(std::shared_ptr<ClientCore> core, Kind kind, std::string message = {},
     bool noCompression = false)
      : core_(std::move(core)),
        kind_(kind),
        out_(std::move(message)),
        noCompression_(noCompression) {}
  Op(Op&& other) noexcept
      : core_(std::move(other.core_)),
        kind_(other.kind_),
        out_(std::move(other.out_)),
        noCompression_(other.noCompression_) {}
  Op& operator=(Op&&) = delete;
  ~Op();

  [[nodiscard]] bool await_ready();
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  void await_resume() const noexcept {}

  // The outcome, after the co_await.
  [[nodiscard]] std::optional<std::string> takeMessage() { return std::move(message_); }
  [[nodiscard]] bool ok() const { return ok_; }
  [[nodiscard]] Status status() const { return status_; }
  [[nodiscard]] ClientCore& core() const { return *core_; }

 private:
  friend class ClientCore;
  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);
  void cancel(coro::Errc why) override;
  // Ended by a scope (at once or while waiting): the call is cancelled.
  void endByScope(coro::Errc why);
  void complete();
  Op*& slot() const;

  std::shared_ptr<ClientCore> core_;
  Kind kind_;
  std::string out_;
  bool noCompression_ = false;
  std::optional<std::string> message_;
  bool ok_ = false;
  Status status_;
  bool waiting_ = false;
};

}  // namespace detail

template <class Req, class Resp>
class CoroClientStream {
 public:
  // On the coroutine's loop thread. The call starts at once.
  CoroClientStream(std::shared_ptr<Channel> channel, std::string path,
                   ClientCallOptions options = {})
      : core_(std::make_shared<detail::ClientCore>()) {
    core_->start(std::move(channel), std::move(path), std::move(options));
  }

  class ReadAwaiter {
   public:
    explicit ReadAwaiter(detail::ClientCore::Op op) : op_(std::move(op)) {}
    [[nodiscard]] bool await_ready() { return op_.await_ready(); }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> awaiting) {
      return op_.await_suspend(awaiting);
    }
    std::optional<Resp> await_resume() {
      std::optional<std::string> bytes = op_.takeMessage();
      if (!bytes) return std::nullopt;
      Resp message;
      if (!message.ParseFromString(*bytes)) {
        op_.core().call().cancel(
            Status(StatusCode::kInternal, "failed to parse a response message"));
        return std::nullopt;
      }
      return message;
    }

   private:
    detail::ClientCore::Op op_;
  };

  class WriteAwaiter {
   public:
    explicit WriteAwaiter(detail::ClientCore::Op op) : op_(std::move(op)) {}
    [[nodiscard]] bool await_ready() { return op_.await_ready(); }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> awaiting) {
      return op_.await_suspend(awaiting);
    }
    bool await_resume() const { return op_.ok(); }

   private:
    detail::ClientCore::Op op_;
  };

  class FinishAwaiter {
   public:
    explicit FinishAwaiter(detail::ClientCore::Op op) : op_(std::move(op)) {}
    [[nodiscard]] bool await_ready() { return op_.await_ready(); }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> awaiting) {
      return op_.await_suspend(awaiting);
    }
    Status await_resume() const { return op_.status(); }

   private:
    detail::ClientCore::Op op_;
  };

  [[nodiscard]] ReadAwaiter read() { return ReadAwaiter(core_->read()); }
  // `noCompression`: this message goes plain on a call that compresses.
  [[nodiscard]] WriteAwaiter write(const Req& message, bool noCompression = false) {
    return WriteAwaiter(core_->write(message.SerializeAsString(), noCompression));
  }
  // No more requests (any thread).
  void halfClose() { core_->call().halfClose(); }
  // The one request of a server-streaming call, then the half-close,
  // without waiting (the call has nothing queued yet).
  void sendLast(const Req& message) {
    core_->call().write(message.SerializeAsString());
    core_->call().halfClose();
  }
  [[nodiscard]] FinishAwaiter finish() { return FinishAwaiter(core_->finish()); }
  void cancel() { core_->call().cancel(); }

  [[nodiscard]] const Metadata& initialMetadata() const { return core_->initialMetadata(); }
  // After finish().
  [[nodiscard]] const Metadata& trailers() const { return core_->trailers(); }
  [[nodiscard]] ClientCall& call() const { return core_->call(); }

 private:
  std::shared_ptr<detail::ClientCore> core_;
};

// A unary call as a coroutine: the reply, or the Status why not (no reply,
// or more than one: INTERNAL). Cancelled with its scope (see above).
template <class Req, class Resp>
coro::Task<Result<Resp>> coroUnary(std::shared_ptr<Channel> channel, std::string path, Req request,
                                   ClientCallOptions options = {}) {
  CoroClientStream<Req, Resp> stream(std::move(channel), std::move(path), std::move(options));
  co_await stream.write(request);  // a failed call shows in its status
  stream.halfClose();
  std::optional<Resp> reply = co_await stream.read();
  if (reply) {
    if (std::optional<Resp> extra = co_await stream.read()) {
      stream.call().cancel(Status(StatusCode::kInternal, "more than one response message"));
    }
  }
  Status status = co_await stream.finish();
  if (!status.ok()) co_return Result<Resp>(std::move(status));
  if (!reply) co_return Result<Resp>(Status(StatusCode::kInternal, "no response message"));
  co_return Result<Resp>(std::move(*reply));
}

}  // namespace libnet::grpc
