#include "net/grpc/Service.h"

#include <google/protobuf/descriptor.h>

#include <memory>
#include <stdexcept>
#include <utility>

namespace libnet::grpc {

namespace {

const std::string& serviceName(const google::protobuf::ServiceDescriptor* descriptor) {
  if (descriptor == nullptr) throw std::invalid_argument("grpc::Service: a null descriptor");
  return descriptor->full_name();
}

// What awaitOneRequest() gathers until the client's end.
struct OneRequest {
  std::string message;
  int count = 0;
};

}  // namespace

Service::Service(const google::protobuf::ServiceDescriptor* descriptor)
    : descriptor_(descriptor), name_(serviceName(descriptor)) {}

void Service::addRawMethod(std::string_view name, MethodKind kind,
                           std::function<void(ServerCallPtr)> handler) {
  std::string path = "/" + name_ + "/" + std::string(name);
  for (const Method& method : methods_) {
    if (method.path == path) throw std::invalid_argument("grpc::Service: two methods " + path);
  }
  methods_.push_back(Method{std::string(name), std::move(path), kind, std::move(handler)});
}

void Service::awaitOneRequest(ServerCallPtr call, std::function<void(std::string)> then) {
  auto state = std::make_shared<OneRequest>();
  // The callbacks hold the call until the client's end: the call lets go of
  // them once that has come (or the call is over).
  call->setMessageCallback([call, state](std::string message) {
    if (++state->count > 1) {
      call->finish(Status(StatusCode::kInternal, "more than one request message"));
      return;
    }
    state->message = std::move(message);
  });
  call->setHalfCloseCallback([call, state, then = std::move(then)] {
    if (state->count != 1) {
      call->finish(Status(StatusCode::kInternal, state->count == 0
                                                     ? "no request message"
                                                     : "more than one request message"));
      return;
    }
    then(std::move(state->message));
  });
}

}  // namespace libnet::grpc
