// grpc_roundtrip: gRPC (libnet_grpc, with protobuf) and code generated from
// grpc_roundtrip.proto by protoc and protoc-gen-libnet, built by the
// consumer tests against an installed or imported libnet the way an
// application would. Checks the generated service's descriptor and
// methods, answers SayHello through a ServerCall of its own (the generated
// handler, the runtime's request gathering, the typed reply), checks that
// Ping, not overridden, answers UNIMPLEMENTED, then serves the service on a
// grpc::Server (loopback, an ephemeral port) and calls SayHello through the
// generated Stub on a grpc::Channel: the client links too. Uses the public
// and generated headers only.
//
// Exit status: 0 and "grpc_roundtrip: OK", 1 otherwise (the reason on
// stderr).

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/grpc/Channel.h"
#include "net/grpc/Server.h"
#include "net/grpc/ServerCall.h"
#include "net/http/HttpServer.h"
#include "tests/consumers/grpc_roundtrip.libnet.h"

namespace {

using namespace libnet;

// A call with no connection under it: the request is handed in, the
// answer kept.
class LocalCall : public grpc::ServerCall {
 public:
  const std::string& method() const override { return method_; }
  const grpc::Metadata& clientMetadata() const override { return metadata_; }
  std::optional<MonoTime> deadline() const override { return std::nullopt; }
  const InetAddress& peer() const override { return peer_; }
  EventLoop* loop() const override { return nullptr; }
  void setMessageCallback(std::function<void(std::string)> callback) override {
    onMessage = std::move(callback);
  }
  void setHalfCloseCallback(std::function<void()> callback) override {
    onHalfClose = std::move(callback);
  }
  void pauseReading() override {}
  void resumeReading() override {}
  void addInitialMetadata(std::string, std::string) override {}
  void addTrailingMetadata(std::string, std::string) override {}
  void setCompression(bool) override {}
  bool write(std::string message) override {
    written = std::move(message);
    return true;
  }
  void setWritableCallback(std::function<void()>) override {}
  void finish(grpc::Status s) override {
    status = std::move(s);
    onMessage = nullptr;
    onHalfClose = nullptr;
  }
  bool cancelled() const override { return false; }
  void setCancelCallback(std::function<void()>) override {}

  std::function<void(std::string)> onMessage;
  std::function<void()> onHalfClose;
  std::string written;
  std::optional<grpc::Status> status;

 private:
  std::string method_ = "/consumer.v1.Greeter/SayHello";
  grpc::Metadata metadata_;
  InetAddress peer_;
};

class Greeter : public consumer::v1::Greeter::Service {
 public:
  void SayHello(
      grpc::ServerStreamPtr<consumer::v1::HelloRequest, consumer::v1::HelloReply> call) override {
    consumer::v1::HelloReply reply;
    reply.set_message("Hello " + call->request().name());
    call->finish(reply);
  }
};

// Runs `method` of `service` with one request message; the call it ran on.
std::shared_ptr<LocalCall> callOnce(const grpc::Service& service, size_t method,
                                    const std::string& request) {
  auto call = std::make_shared<LocalCall>();
  service.methods().at(method).handler(call);
  if (call->onMessage) call->onMessage(request);
  if (call->onHalfClose) call->onHalfClose();
  return call;
}

int fail(const char* what) {
  std::fprintf(stderr, "grpc_roundtrip: %s\n", what);
  return 1;
}

// Serves `greeter` on loopback and calls its SayHello through the Stub.
int callOverTheNetwork(Greeter& greeter) {
  EventLoop loop;
  http::HttpServer http(&loop, InetAddress(0, true), "grpc_roundtrip");
  grpc::Server server(http, {});
  server.addService(&greeter);
  http.start();
  auto channel =
      grpc::Channel::create(&loop, "127.0.0.1:" + std::to_string(http.listenAddress().port()), {});
  consumer::v1::Greeter::Stub stub(channel);
  consumer::v1::HelloRequest request;
  request.set_name("network");
  std::string answer = "no answer within 10 s";
  stub.SayHello(request, [&](grpc::Status status, consumer::v1::HelloReply reply) {
    answer = status.ok() ? reply.message() : status.toString();
    loop.quit();
  });
  loop.runAfter(std::chrono::seconds(10), [&loop] { loop.quit(); });
  loop.loop();
  channel->shutdown();
  if (answer != "Hello network") {
    std::fprintf(stderr, "grpc_roundtrip: the call over the network: %s\n", answer.c_str());
    return 1;
  }
  std::puts("grpc_roundtrip: OK");
  return 0;
}

}  // namespace

int main() {
  if (consumer::v1::Greeter::descriptor() == nullptr ||
      consumer::v1::Greeter::descriptor()->full_name() != "consumer.v1.Greeter") {
    return fail("no descriptor of consumer.v1.Greeter in the generated pool");
  }
  Greeter greeter;
  if (greeter.methods().size() != 2 ||
      greeter.methods()[0].path != "/consumer.v1.Greeter/SayHello" ||
      greeter.methods()[1].kind != grpc::MethodKind::kUnary) {
    return fail("unexpected methods");
  }
  consumer::v1::HelloRequest request;
  request.set_name("consumer");
  auto hello = callOnce(greeter, 0, request.SerializeAsString());
  consumer::v1::HelloReply reply;
  if (!hello->status || !hello->status->ok() || !reply.ParseFromString(hello->written) ||
      reply.message() != "Hello consumer") {
    return fail("SayHello did not answer \"Hello consumer\"");
  }
  auto ping = callOnce(greeter, 1, "");
  if (!ping->status || ping->status->code() != grpc::StatusCode::kUnimplemented) {
    return fail("Ping (not overridden) did not answer UNIMPLEMENTED");
  }

  return callOverTheNetwork(greeter);
}
