// LibnetGenerator: protoc's code generator for libnet's gRPC services. For
// each .proto file DIR/NAME.proto it writes DIR/NAME.libnet.h and
// DIR/NAME.libnet.cc (both, also for a file without services, so that a
// build rule can name its outputs in advance), with the classes of
// ServiceWriter in the file's C++ namespace. The messages are protoc's own
// --cpp_out (DIR/NAME.pb.h), which the header includes by the same
// workspace-relative path. No parameters. One thread (protoc's).
#pragma once

#include <string>

#include <google/protobuf/compiler/code_generator.h>

namespace libnet::grpc::plugin {

class LibnetGenerator : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file, const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context,
                std::string* error) const override;

  [[nodiscard]] uint64_t GetSupportedFeatures() const override;
};

}  // namespace libnet::grpc::plugin
