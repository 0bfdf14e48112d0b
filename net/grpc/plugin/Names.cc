#include "net/grpc/plugin/Names.h"

#include <google/protobuf/compiler/cpp/names.h>
#include <google/protobuf/descriptor.h>

namespace libnet::grpc::plugin {

namespace gp = google::protobuf;

std::string cppNamespace(const gp::FileDescriptor* file) {
  std::string result;
  for (char c : file->package()) {
    if (c == '.') {
      result += "::";
    } else {
      result += c;
    }
  }
  return result;
}

std::string protoStem(const gp::FileDescriptor* file) {
  return gp::compiler::cpp::StripProto(file->name());
}

std::string requestType(const gp::MethodDescriptor* method) {
  return gp::compiler::cpp::QualifiedClassName(method->input_type());
}

std::string responseType(const gp::MethodDescriptor* method) {
  return gp::compiler::cpp::QualifiedClassName(method->output_type());
}

std::string methodKind(const gp::MethodDescriptor* method) {
  if (method->client_streaming()) {
    return method->server_streaming() ? "kBidiStreaming" : "kClientStreaming";
  }
  return method->server_streaming() ? "kServerStreaming" : "kUnary";
}

std::string callbackContract(const gp::MethodDescriptor* method) {
  if (method->client_streaming()) {
    return std::string(method->server_streaming() ? "Bidirectional streaming"
                                                  : "Client streaming") +
           ": runs when the call begins; the requests come to call->onMessage(), the "
           "client's end to call->onHalfClose(); answer with " +
           (method->server_streaming() ? "call->write() and call->finish(status)."
                                       : "call->finish(reply) or call->finish(status).");
  }
  return std::string(method->server_streaming() ? "Server streaming" : "Unary") +
         ": runs once the request has arrived (call->request()); answer with " +
         (method->server_streaming() ? "call->write() and call->finish(status)."
                                     : "call->finish(reply) or call->finish(status).");
}

std::string coroutineContract(const gp::MethodDescriptor* method) {
  const char* kind =
      method->client_streaming()
          ? (method->server_streaming() ? "Bidirectional streaming" : "Client streaming")
          : (method->server_streaming() ? "Server streaming" : "Unary");
  const char* reads = method->client_streaming() ? "reads the requests from `call` until their end"
                                                 : "reads the one request from `call`";
  const char* writes =
      method->server_streaming() ? "writes any number of replies" : "writes one reply";
  return std::string(kind) + ": " + reads + ", " + writes +
         " and returns the status; stopped when the call is cancelled.";
}

}  // namespace libnet::grpc::plugin
