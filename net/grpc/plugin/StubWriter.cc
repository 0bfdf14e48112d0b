#include "net/grpc/plugin/StubWriter.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/printer.h>

#include <map>
#include <string>

#include "net/grpc/plugin/Names.h"

namespace libnet::grpc::plugin {

namespace gp = google::protobuf;

namespace {

using Vars = std::map<std::string, std::string>;

void writeUnary(gp::io::Printer& out, const Vars& vars) {
  out.Print(vars,
            "// rpc $method$: `done` gets the status and the reply (on the channel's\n"
            "// loop); the coroutine form gives both as a Result.\n"
            "void $method$(const $req$& request,\n"
            "    std::function<void(::libnet::grpc::Status, $resp$)> done,\n"
            "    ::libnet::grpc::ClientCallOptions options = {}) {\n"
            "  ::libnet::grpc::unaryCall<$req$, $resp$>(channel_, \"$path$\", request,\n"
            "      std::move(done), std::move(options));\n"
            "}\n"
            "[[nodiscard]] ::libnet::coro::Task<::libnet::grpc::Result<$resp$>> $method$(\n"
            "    const $req$& request, ::libnet::grpc::ClientCallOptions options = {}) {\n"
            "  return ::libnet::grpc::coroUnary<$req$, $resp$>(channel_, \"$path$\", request,\n"
            "      std::move(options));\n"
            "}\n");
}

void writeServerStreaming(gp::io::Printer& out, const Vars& vars) {
  out.Print(vars,
            "// rpc $method$ (server streaming): the request is sent and the\n"
            "// stream half-closed; the replies come to the callbacks, or to read().\n"
            "::libnet::grpc::ClientStreamPtr<$req$, $resp$> $method$(const $req$& request,\n"
            "    ::libnet::grpc::ClientStream<$req$, $resp$>::Callbacks callbacks,\n"
            "    ::libnet::grpc::ClientCallOptions options = {}) {\n"
            "  auto stream = ::libnet::grpc::ClientStream<$req$, $resp$>::start(\n"
            "      channel_, \"$path$\", std::move(callbacks), std::move(options));\n"
            "  stream->write(request);\n"
            "  stream->halfClose();\n"
            "  return stream;\n"
            "}\n"
            "[[nodiscard]] ::libnet::grpc::CoroClientStream<$req$, $resp$> $method$(\n"
            "    const $req$& request, ::libnet::grpc::ClientCallOptions options = {}) {\n"
            "  ::libnet::grpc::CoroClientStream<$req$, $resp$> stream(channel_, \"$path$\",\n"
            "      std::move(options));\n"
            "  stream.sendLast(request);\n"
            "  return stream;\n"
            "}\n");
}

void writeStreaming(gp::io::Printer& out, const Vars& vars) {
  out.Print(vars,
            "// rpc $method$ ($kindText$): write() the requests, then halfClose().\n"
            "::libnet::grpc::ClientStreamPtr<$req$, $resp$> $method$(\n"
            "    ::libnet::grpc::ClientStream<$req$, $resp$>::Callbacks callbacks,\n"
            "    ::libnet::grpc::ClientCallOptions options = {}) {\n"
            "  return ::libnet::grpc::ClientStream<$req$, $resp$>::start(\n"
            "      channel_, \"$path$\", std::move(callbacks), std::move(options));\n"
            "}\n"
            "[[nodiscard]] ::libnet::grpc::CoroClientStream<$req$, $resp$> $method$(\n"
            "    ::libnet::grpc::ClientCallOptions options = {}) {\n"
            "  return ::libnet::grpc::CoroClientStream<$req$, $resp$>(channel_, \"$path$\",\n"
            "      std::move(options));\n"
            "}\n");
}

}  // namespace

void StubWriter::writeClass(gp::io::Printer& out) const {
  out.Print(
      "// The client: each method in a callback form and a coroutine form\n"
      "// (docs/grpc.md, \"Client\"). Copyable; any thread.\n"
      "class Stub {\n"
      " public:\n"
      "  explicit Stub(std::shared_ptr<::libnet::grpc::Channel> channel)\n"
      "      : channel_(std::move(channel)) {}\n"
      "  [[nodiscard]] const std::shared_ptr<::libnet::grpc::Channel>& channel() const {\n"
      "    return channel_;\n"
      "  }\n");
  out.Indent();
  for (int i = 0; i < service_->method_count(); ++i) {
    const gp::MethodDescriptor* method = service_->method(i);
    const Vars vars = {
        {"method", method->name()},
        {"path", "/" + service_->full_name() + "/" + method->name()},
        {"req", requestType(method)},
        {"resp", responseType(method)},
        {"kindText", method->client_streaming() && method->server_streaming() ? "bidi streaming"
                                                                              : "client streaming"},
    };
    out.Print("\n");
    if (!method->client_streaming() && !method->server_streaming()) {
      writeUnary(out, vars);
    } else if (!method->client_streaming()) {
      writeServerStreaming(out, vars);
    } else {
      writeStreaming(out, vars);
    }
  }
  out.Outdent();
  out.Print(
      "\n private:\n"
      "  std::shared_ptr<::libnet::grpc::Channel> channel_;\n"
      "};\n");
}

}  // namespace libnet::grpc::plugin
