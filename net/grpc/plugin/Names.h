// The C++ spellings the plugin writes: namespaces, message types, method
// kinds, as protoc's own C++ generator names them (so that the generated
// services refer to the classes of NAME.pb.h).
#pragma once

#include <string>

namespace google::protobuf {
class FileDescriptor;
class MethodDescriptor;
}  // namespace google::protobuf

namespace libnet::grpc::plugin {

// "a.b" -> "a::b"; "" for a file without a package.
[[nodiscard]] std::string cppNamespace(const google::protobuf::FileDescriptor* file);
// "dir/name.proto" -> "dir/name".
[[nodiscard]] std::string protoStem(const google::protobuf::FileDescriptor* file);
// The fully qualified request and response classes ("::a::b::Outer_Inner").
[[nodiscard]] std::string requestType(const google::protobuf::MethodDescriptor* method);
[[nodiscard]] std::string responseType(const google::protobuf::MethodDescriptor* method);
// "kUnary", "kServerStreaming", "kClientStreaming", "kBidiStreaming".
[[nodiscard]] std::string methodKind(const google::protobuf::MethodDescriptor* method);
// What the kind means to a callback handler and to a coroutine, for the
// comment above each method of the generated header.
[[nodiscard]] std::string callbackContract(const google::protobuf::MethodDescriptor* method);
[[nodiscard]] std::string coroutineContract(const google::protobuf::MethodDescriptor* method);

}  // namespace libnet::grpc::plugin
