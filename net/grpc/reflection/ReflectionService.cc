#include "net/grpc/reflection/ReflectionService.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <algorithm>
#include <set>
#include <utility>

namespace libnet::grpc {

namespace gp = google::protobuf;

namespace {

void setError(ReflectionService::Response& response, StatusCode code, std::string message) {
  auto* error = response.mutable_error_response();
  error->set_error_code(static_cast<int32_t>(code));
  error->set_error_message(std::move(message));
}

}  // namespace

ReflectionService::ReflectionService() {
  MutexLock lock(mutex_);
  // Generated services' files are found here even before any is added.
  pools_.push_back(gp::DescriptorPool::generated_pool());
  addDescriptor(descriptor());
}

void ReflectionService::addService(const ::libnet::grpc::Service& service) {
  MutexLock lock(mutex_);
  addDescriptor(service.descriptor());
}

void ReflectionService::addDescriptor(const gp::ServiceDescriptor* service) {
  if (service == nullptr) return;
  if (std::find(services_.begin(), services_.end(), service->full_name()) == services_.end()) {
    services_.push_back(service->full_name());
  }
  const gp::DescriptorPool* pool = service->file()->pool();
  if (std::find(pools_.begin(), pools_.end(), pool) == pools_.end()) pools_.push_back(pool);
}

ReflectionService::Pools ReflectionService::pools() const {
  MutexLock lock(mutex_);
  return pools_;
}

ReflectionService::Response ReflectionService::answer(const Request& request) const {
  Response response;
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  switch (request.message_request_case()) {
    case Request::kListServices: {
      MutexLock lock(mutex_);
      for (const auto& name : services_) {
        response.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    }
    case Request::kFileByFilename:
      fileByName(pools(), request.file_by_filename(), response);
      break;
    case Request::kFileContainingSymbol:
      fileBySymbol(pools(), request.file_containing_symbol(), response);
      break;
    case Request::kFileContainingExtension:
      fileByExtension(pools(), request, response);
      break;
    case Request::kAllExtensionNumbersOfType:
      extensionNumbers(pools(), request.all_extension_numbers_of_type(), response);
      break;
    case Request::MESSAGE_REQUEST_NOT_SET:
      setError(response, StatusCode::kInvalidArgument, "no request");
      break;
  }
  return response;
}

// `file` and what it imports, transitively, each once, imports first.
void ReflectionService::addFiles(const gp::FileDescriptor* file, Response& response) {
  std::set<const gp::FileDescriptor*> seen;
  std::vector<const gp::FileDescriptor*> order;
  std::vector<std::pair<const gp::FileDescriptor*, int>> stack{{file, 0}};
  seen.insert(file);
  while (!stack.empty()) {
    auto& [current, next] = stack.back();
    if (next < current->dependency_count()) {
      const gp::FileDescriptor* dependency = current->dependency(next++);
      if (seen.insert(dependency).second) stack.emplace_back(dependency, 0);
      continue;
    }
    order.push_back(current);
    stack.pop_back();
  }
  auto* files = response.mutable_file_descriptor_response();
  for (const gp::FileDescriptor* each : order) {
    gp::FileDescriptorProto proto;
    each->CopyTo(&proto);
    files->add_file_descriptor_proto(proto.SerializeAsString());
  }
}

void ReflectionService::fileByName(const Pools& pools, const std::string& name,
                                   Response& response) {
  for (const gp::DescriptorPool* pool : pools) {
    if (const gp::FileDescriptor* file = pool->FindFileByName(name)) {
      addFiles(file, response);
      return;
    }
  }
  setError(response, StatusCode::kNotFound, "file not found: " + name);
}

void ReflectionService::fileBySymbol(const Pools& pools, const std::string& symbol,
                                     Response& response) {
  for (const gp::DescriptorPool* pool : pools) {
    if (const gp::FileDescriptor* file = pool->FindFileContainingSymbol(symbol)) {
      addFiles(file, response);
      return;
    }
  }
  setError(response, StatusCode::kNotFound, "symbol not found: " + symbol);
}

void ReflectionService::fileByExtension(const Pools& pools, const Request& request,
                                        Response& response) {
  const auto& wanted = request.file_containing_extension();
  for (const gp::DescriptorPool* pool : pools) {
    const gp::Descriptor* type = pool->FindMessageTypeByName(wanted.containing_type());
    if (type == nullptr) continue;
    if (const gp::FieldDescriptor* field =
            pool->FindExtensionByNumber(type, wanted.extension_number())) {
      addFiles(field->file(), response);
      return;
    }
  }
  setError(response, StatusCode::kNotFound,
           "extension not found: " + wanted.containing_type() + " " +
               std::to_string(wanted.extension_number()));
}

void ReflectionService::extensionNumbers(const Pools& pools, const std::string& type,
                                         Response& response) {
  for (const gp::DescriptorPool* pool : pools) {
    const gp::Descriptor* descriptor = pool->FindMessageTypeByName(type);
    if (descriptor == nullptr) continue;
    std::vector<const gp::FieldDescriptor*> extensions;
    pool->FindAllExtensions(descriptor, &extensions);
    auto* numbers = response.mutable_all_extension_numbers_response();
    numbers->set_base_type_name(type);
    for (const gp::FieldDescriptor* extension : extensions) {
      numbers->add_extension_number(extension->number());
    }
    return;
  }
  setError(response, StatusCode::kNotFound, "type not found: " + type);
}

void ReflectionService::ServerReflectionInfo(ServerStreamPtr<Request, Response> call) {
  // Each answer is written as its request comes; past the writer's
  // high-water mark the client is not read until the answers drain.
  call->onMessage([this, call](Request request) {
    if (!call->write(answer(request))) call->pause();
  });
  call->onWritable([call] { call->resume(); });
  call->onHalfClose([call] { call->finish(Status()); });
}

}  // namespace libnet::grpc
