// StubWriter: the client of one protobuf service, class S::Stub, written
// into the generated header inside class S (ServiceWriter calls it). The
// stub is inline: each method forwards to the templates of
// net/grpc/ClientStream.h (callbacks) and net/grpc/CoroClient.h
// (coroutines) with the method's path and types (docs/grpc.md, "Client").
// Runs inside protoc's plugin call, on one thread.
#pragma once

namespace google::protobuf {
class ServiceDescriptor;
namespace io {
class Printer;
}
}  // namespace google::protobuf

namespace libnet::grpc::plugin {

class StubWriter {
 public:
  explicit StubWriter(const google::protobuf::ServiceDescriptor* service) : service_(service) {}

  void writeClass(google::protobuf::io::Printer& out) const;

 private:
  const google::protobuf::ServiceDescriptor* const service_;
};

}  // namespace libnet::grpc::plugin
