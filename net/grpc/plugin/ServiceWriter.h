// ServiceWriter: the generated code of one protobuf service, into the
// header and into the source of its file (LibnetGenerator opens them). For a
// service S it writes class S with descriptor(), S::Service (callback
// handlers) and S::CoroService (coroutine handlers), each deriving from
// libnet::grpc::Service and registering every method of S (docs/grpc.md,
// "Generating code"). Runs inside protoc's plugin call, on one thread.
#pragma once

#include <map>
#include <string>

namespace google::protobuf {
class MethodDescriptor;
class ServiceDescriptor;
namespace io {
class Printer;
}
}  // namespace google::protobuf

namespace libnet::grpc::plugin {

class ServiceWriter {
 public:
  explicit ServiceWriter(const google::protobuf::ServiceDescriptor* service);

  void writeHeader(google::protobuf::io::Printer& out) const;
  void writeSource(google::protobuf::io::Printer& out) const;

 private:
  using Vars = std::map<std::string, std::string>;

  [[nodiscard]] Vars methodVars(const google::protobuf::MethodDescriptor* method) const;
  void writeCallbackClass(google::protobuf::io::Printer& out) const;
  void writeCoroClass(google::protobuf::io::Printer& out) const;
  void writeCallbackSource(google::protobuf::io::Printer& out) const;
  void writeCoroSource(google::protobuf::io::Printer& out) const;

  const google::protobuf::ServiceDescriptor* const service_;
  const Vars vars_;
};

}  // namespace libnet::grpc::plugin
