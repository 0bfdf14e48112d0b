// grpc::Service: the methods of one protobuf service, as a grpc::Server
// serves them. The code generated from a .proto (//net/grpc:proto.bzl,
// docs/grpc.md) derives one class per service from it and registers each
// method with a typed handler; the program derives from that class and
// overrides the methods it implements (the others answer UNIMPLEMENTED).
//
// Callback handlers get a ServerStream<Req, Resp>: one object for all four
// kinds of method.
//   - unary, server streaming: the handler runs once the client's one
//     request message has arrived (request()); a call with none or more than
//     one ends INTERNAL without it;
//   - client, bidi streaming: the handler runs when the call begins; the
//     messages come to onMessage(), the client's end to onHalfClose().
// Every kind answers with write() (one message) and finish(status), or
// finish(reply) for a method with one answer (write, then OK). The stream
// may be kept and answered later, from any thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/grpc/ServerCall.h"
#include "net/grpc/Status.h"

namespace google::protobuf {
class ServiceDescriptor;
}

namespace libnet::coro {
template <class T>
class Task;
}

namespace libnet::grpc {

// The coroutine form of a call (net/grpc/CoroStream.h).
template <class Req, class Resp>
class CoroStream;

enum class MethodKind { kUnary, kServerStreaming, kClientStreaming, kBidiStreaming };

// One request message for unary and server-streaming methods.
[[nodiscard]] inline bool takesOneRequest(MethodKind kind) {
  return kind == MethodKind::kUnary || kind == MethodKind::kServerStreaming;
}

template <class Req, class Resp>
class ServerStream {
 public:
  explicit ServerStream(ServerCallPtr call) : call_(std::move(call)) {}

  // Metadata, deadline, peer, loop; trailing metadata, compression.
  [[nodiscard]] ServerCall& call() const { return *call_; }
  // The request of a unary or server-streaming method.
  [[nodiscard]] const Req& request() const { return *request_; }

  // Client and bidi streaming; loop thread. A message that does not parse
  // ends the call INTERNAL.
  void onMessage(std::function<void(Req)> callback) {
    call_->setMessageCallback([call = call_, callback = std::move(callback)](std::string bytes) {
      Req message;
      if (!message.ParseFromString(bytes)) {
        call->finish(Status(StatusCode::kInternal, "failed to parse a request message"));
        return;
      }
      callback(std::move(message));
    });
  }
  void onHalfClose(std::function<void()> callback) {
    call_->setHalfCloseCallback(std::move(callback));
  }
  void pause() { call_->pauseReading(); }
  void resume() { call_->resumeReading(); }

  // Any thread.
  bool write(const Resp& message) { return call_->write(message.SerializeAsString()); }
  void finish(const Resp& reply) {
    call_->write(reply.SerializeAsString());
    call_->finish(Status());
  }
  void finish(Status status) { call_->finish(std::move(status)); }
  void onWritable(std::function<void()> callback) {
    call_->setWritableCallback(std::move(callback));
  }
  void onCancel(std::function<void()> callback) { call_->setCancelCallback(std::move(callback)); }
  [[nodiscard]] bool cancelled() const { return call_->cancelled(); }

  // The server's side: the one request of a unary or server-streaming call.
  void setRequest(Req request) { request_.emplace(std::move(request)); }

 private:
  ServerCallPtr call_;
  std::optional<Req> request_;
};

template <class Req, class Resp>
using ServerStreamPtr = std::shared_ptr<ServerStream<Req, Resp>>;

class Service {
 public:
  struct Method {
    std::string name;  // "SayHello"
    std::string path;  // "/helloworld.Greeter/SayHello"
    MethodKind kind;
    // Runs on the call's loop when the call begins (its head is complete).
    std::function<void(ServerCallPtr)> handler;
  };

  // `descriptor` (generated: Greeter::descriptor()) names the service and
  // feeds server reflection.
  explicit Service(const google::protobuf::ServiceDescriptor* descriptor);
  virtual ~Service() = default;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const google::protobuf::ServiceDescriptor* descriptor() const {
    return descriptor_;
  }
  [[nodiscard]] const std::vector<Method>& methods() const { return methods_; }

 protected:
  // Untyped: the handler takes the call as it begins.
  void addRawMethod(std::string_view name, MethodKind kind,
                    std::function<void(ServerCallPtr)> handler);

  // Typed: the handler gets a ServerStream (see the file comment).
  template <class Req, class Resp>
  void addMethod(std::string_view name, MethodKind kind,
                 std::function<void(ServerStreamPtr<Req, Resp>)> handler) {
    addRawMethod(name, kind, [kind, handler = std::move(handler)](ServerCallPtr call) {
      auto stream = std::make_shared<ServerStream<Req, Resp>>(call);
      if (!takesOneRequest(kind)) {
        handler(std::move(stream));
        return;
      }
      awaitOneRequest(std::move(call), [stream, handler](std::string bytes) {
        Req request;
        if (!request.ParseFromString(bytes)) {
          stream->finish(Status(StatusCode::kInternal, "failed to parse the request message"));
          return;
        }
        stream->setRequest(std::move(request));
        handler(stream);
      });
    });
  }

  // Coroutine handlers (defined in net/grpc/CoroStream.h, which the
  // generated code of a CoroService includes): the coroutine runs on the
  // call's loop with a CoroStream, is stopped when the call is cancelled,
  // and its Status finishes the call (a throw: INTERNAL).
  template <class Req, class Resp>
  void addCoroMethod(std::string_view name, MethodKind kind,
                     std::function<coro::Task<Status>(CoroStream<Req, Resp>&)> handler);

  // Collects the one request message of `call` and runs `then` with it once
  // the client has half-closed; none or more than one ends it INTERNAL.
  static void awaitOneRequest(ServerCallPtr call, std::function<void(std::string)> then);

 private:
  const google::protobuf::ServiceDescriptor* const descriptor_;
  const std::string name_;
  std::vector<Method> methods_;
};

}  // namespace libnet::grpc
