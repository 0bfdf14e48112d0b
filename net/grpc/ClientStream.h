// grpc::ClientStream<Req, Resp>: a typed call with callbacks, one class for
// the streaming kinds (ClientCall underneath; its threads and rules), and
// grpc::unaryCall() for a unary method. The generated stubs call these:
//
//   stub.SayHello(request, [](grpc::Status status, HelloReply reply) { ... });
//   auto stream = stub.ListFeatures(rect, {
//       .onMessage = [](Feature f) { ... },
//       .onFinish = [](const grpc::Status& s, const grpc::Metadata&) { ... }});
//
// Callbacks run on the channel's loop. A response message that does not
// parse ends the call INTERNAL (its stream cancelled).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "net/grpc/Channel.h"
#include "net/grpc/ClientCall.h"
#include "net/grpc/ClientCallOptions.h"
#include "net/grpc/Metadata.h"
#include "net/grpc/Status.h"

namespace libnet::grpc {

template <class Req, class Resp>
class ClientStream {
 public:
  struct Callbacks {
    std::function<void(const Metadata& metadata)> onInitialMetadata{};
    std::function<void(Resp message)> onMessage{};
    // Exactly once, last.
    std::function<void(const Status& status, const Metadata& trailers)> onFinish{};
    // write() said false and the output has drained since.
    std::function<void()> onWritable{};
  };

  // Any thread. The call starts at once; write() its requests (server
  // streaming: done for it by the stub, with the half-close).
  [[nodiscard]] static std::shared_ptr<ClientStream> start(std::shared_ptr<Channel> channel,
                                                           std::string path, Callbacks callbacks,
                                                           ClientCallOptions options = {}) {
    auto stream = std::shared_ptr<ClientStream>(new ClientStream());
    ClientCall::Callbacks raw;
    raw.onInitialMetadata = std::move(callbacks.onInitialMetadata);
    raw.onWritable = std::move(callbacks.onWritable);
    raw.onFinish = std::move(callbacks.onFinish);
    // The call reaches itself through a weak pointer: the typed callback
    // must not keep the call (which owns it) alive.
    auto self = std::make_shared<std::weak_ptr<ClientCall>>();
    raw.onMessage = [self, onMessage = std::move(callbacks.onMessage)](std::string bytes) {
      Resp message;
      if (!message.ParseFromString(bytes)) {
        if (const auto call = self->lock()) {
          call->cancel(Status(StatusCode::kInternal, "failed to parse a response message"));
        }
        return;
      }
      if (onMessage) onMessage(std::move(message));
    };
    stream->call_ =
        ClientCall::start(std::move(channel), std::move(path), std::move(options), std::move(raw));
    *self = stream->call_;
    return stream;
  }

  // Any thread (ClientCall's).
  bool write(const Req& message) { return call_->write(message.SerializeAsString()); }
  void halfClose() { call_->halfClose(); }
  void cancel() { call_->cancel(); }
  void pause() { call_->pause(); }
  void resume() { call_->resume(); }
  [[nodiscard]] bool finished() const { return call_->finished(); }
  [[nodiscard]] ClientCall& call() const { return *call_; }
  [[nodiscard]] const std::shared_ptr<ClientCall>& callPtr() const { return call_; }

 private:
  ClientStream() = default;
  std::shared_ptr<ClientCall> call_;
};

template <class Req, class Resp>
using ClientStreamPtr = std::shared_ptr<ClientStream<Req, Resp>>;

// A unary call: `done` runs once on the channel's loop with the status and,
// when it is OK, the reply (a default Resp otherwise). A response of no
// message or of more than one ends INTERNAL. Any thread.
template <class Req, class Resp>
void unaryCall(std::shared_ptr<Channel> channel, std::string path, const Req& request,
               std::function<void(Status status, Resp reply)> done,
               ClientCallOptions options = {}) {
  struct State {
    std::optional<Resp> reply;
    bool extra = false;
  };
  auto state = std::make_shared<State>();
  typename ClientStream<Req, Resp>::Callbacks callbacks;
  auto self = std::make_shared<std::weak_ptr<ClientCall>>();
  callbacks.onMessage = [state, self](Resp message) {
    if (state->reply) {
      state->extra = true;
      if (const auto call = self->lock()) {
        call->cancel(Status(StatusCode::kInternal, "more than one response message"));
      }
      return;
    }
    state->reply.emplace(std::move(message));
  };
  callbacks.onFinish = [state, done = std::move(done)](const Status& status, const Metadata&) {
    if (status.ok() && !state->reply) {
      done(Status(StatusCode::kInternal, "no response message"), Resp());
      return;
    }
    done(status, status.ok() ? std::move(*state->reply) : Resp());
  };
  auto stream = ClientStream<Req, Resp>::start(std::move(channel), std::move(path),
                                               std::move(callbacks), std::move(options));
  *self = stream->callPtr();
  stream->write(request);
  stream->halfClose();
}

}  // namespace libnet::grpc
