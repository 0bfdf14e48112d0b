// grpc::ReflectionService: gRPC server reflection, v1alpha
// (grpc.reflection.v1alpha.ServerReflection, net/grpc/reflection/
// reflection.proto), so that grpcurl's `list` and `describe` and grpc_cli
// work against a libnet server. One bidirectional call answers each request
// in order:
//   - list_services: the services added (and this one);
//   - file_by_filename, file_containing_symbol, file_containing_extension:
//     the FileDescriptorProto of that file and of every file it imports,
//     transitively, from the pools of the services added (protobuf's
//     generated pool for generated services);
//   - all_extension_numbers_of_type: the extension numbers of a message;
//   - an unknown name: an error_response with NOT_FOUND, and the call goes
//     on; a request with none of these: INVALID_ARGUMENT.
//
// addService() may be called from any thread, typically before serving;
// calls run on their connections' loops. A client that sends requests and
// does not read the answers stops being read once one answer waits past
// its writer's high-water mark. The object must outlive the server.
#pragma once

#include <string>
#include <vector>

#include "base/Mutex.h"
#include "net/grpc/reflection/reflection.libnet.h"

namespace google::protobuf {
class DescriptorPool;
class FileDescriptor;
}  // namespace google::protobuf

namespace libnet::grpc {

class ReflectionService : public ::grpc::reflection::v1alpha::ServerReflection::Service {
 public:
  using Request = ::grpc::reflection::v1alpha::ServerReflectionRequest;
  using Response = ::grpc::reflection::v1alpha::ServerReflectionResponse;

  ReflectionService();

  // Lists `service` by name and searches its descriptor's pool; a name
  // already listed is not listed twice.
  // (::libnet::grpc::Service: here, Service alone is the generated base.)
  void addService(const ::libnet::grpc::Service& service);

  // The answer to one request (what the call writes for it).
  [[nodiscard]] Response answer(const Request& request) const;

  void ServerReflectionInfo(ServerStreamPtr<Request, Response> call) override;

 private:
  using Pools = std::vector<const google::protobuf::DescriptorPool*>;

  void addDescriptor(const google::protobuf::ServiceDescriptor* descriptor) LIBNET_REQUIRES(mutex_);
  [[nodiscard]] Pools pools() const;
  static void addFiles(const google::protobuf::FileDescriptor* file, Response& response);
  static void fileByName(const Pools& pools, const std::string& name, Response& response);
  static void fileBySymbol(const Pools& pools, const std::string& symbol, Response& response);
  static void fileByExtension(const Pools& pools, const Request& request, Response& response);
  static void extensionNumbers(const Pools& pools, const std::string& type, Response& response);

  mutable Mutex mutex_;
  std::vector<std::string> services_ LIBNET_GUARDED_BY(mutex_);
  Pools pools_ LIBNET_GUARDED_BY(mutex_);
};

}  // namespace libnet::grpc
