#include "net/grpc/Server.h"

#include <stdexcept>
#include <string_view>
#include <utility>

#include "net/grpc/CallOptions.h"
#include "net/grpc/Http2ServerCall.h"
#include "net/http/HttpServer.h"

namespace libnet::grpc {

struct Server::Shared {
  CallOptions call;
  // By path ("/package.Service/Method"); the services outlive the server.
  std::unordered_map<std::string, const Service::Method*> methods;
  std::unordered_map<std::string, Service*> services;
  // Where every other request went before.
  http::HttpServer::Router router;
  http::HttpServer::AsyncHandler asyncHandler;
};

namespace {

// An HTTP/2 POST of application/grpc, or of application/grpc+<format> /
// application/grpc;<parameters>.
bool isGrpc(const http::HttpRequest& head) {
  if (head.version() != http::Version::kHttp2 || head.method() != http::Method::kPost) {
    return false;
  }
  const std::optional<std::string_view> type = head.header("content-type");
  constexpr std::string_view kType = "application/grpc";
  if (!type || !type->starts_with(kType)) return false;
  return type->size() == kType.size() || (*type)[kType.size()] == '+' ||
         (*type)[kType.size()] == ';';
}

void unimplemented(const std::string& path, const Server::Shared& shared,
                   const http::ResponseWriterPtr& writer) {
  const size_t slash = path.find('/', 1);
  const std::string service = slash == std::string::npos ? path : path.substr(1, slash - 1);
  Http2ServerCall::refuse(writer,
                          Status(StatusCode::kUnimplemented, shared.services.contains(service)
                                                                 ? "unknown method " + path
                                                                 : "unknown service " + service));
}

void dispatch(const Server::Shared& shared, const http::HttpRequest& request,
              http::ResponseWriterPtr writer) {
  const auto found = shared.methods.find(request.path());
  if (found == shared.methods.end()) {
    unimplemented(request.path(), shared, writer);
    return;
  }
  const Service::Method& method = *found->second;
  const std::shared_ptr<Http2ServerCall> call =
      Http2ServerCall::make(shared.call, request, method.path, std::move(writer));
  if (call) call->run(method.handler);
}

}  // namespace

Server::Server(http::HttpServer& http, Options options, http2::Options h2)
    : options_(options), shared_(std::make_shared<Shared>()) {
  if (options.maxReceiveMessageBytes == 0 || options.maxSendMessageBytes == 0) {
    throw std::invalid_argument("grpc::Server: message bounds must be positive");
  }
  shared_->call.maxReceiveMessageBytes = options.maxReceiveMessageBytes;
  shared_->call.maxSendMessageBytes = options.maxSendMessageBytes;
  shared_->call.maxDeadline = options.maxDeadline;
  shared_->call.compress = options.compress;
  shared_->call.highWater = http.options().writer.highWater;
  shared_->call.lowWater = http.options().writer.lowWater;
  shared_->router = http.router();
  shared_->asyncHandler = http.asyncHandler();
  const bool async = static_cast<bool>(shared_->asyncHandler);
  http.setRouter([shared = shared_, async](const http::HttpRequest& head) {
    if (isGrpc(head)) return http::HttpServer::Route::kStreamedBody;
    if (shared->router) return shared->router(head);
    return async ? http::HttpServer::Route::kAsync : http::HttpServer::Route::kHandler;
  });
  http.setAsyncHandler(
      [shared = shared_](const http::HttpRequest& request, http::ResponseWriterPtr writer) {
        if (isGrpc(request)) {
          dispatch(*shared, request, std::move(writer));
        } else if (shared->asyncHandler) {
          shared->asyncHandler(request, std::move(writer));
        } else {
          http::HttpResponse response(false);
          response.setStatusPage(500);
          writer->respond(std::move(response));
        }
      });
  h2.maxConcurrentStreams = options.maxConcurrentStreams;
  h2_ = http2::serve(http, h2);
}

Server::~Server() = default;

void Server::addService(Service* service) {
  if (service == nullptr) throw std::invalid_argument("grpc::Server: a null service");
  if (!shared_->services.emplace(service->name(), service).second) {
    throw std::invalid_argument("grpc::Server: two services named " + service->name());
  }
  for (const Service::Method& method : service->methods()) {
    shared_->methods.emplace(method.path, &method);
  }
}

void Server::goAway(std::function<void()> done) { h2_->goAway(std::move(done)); }

}  // namespace libnet::grpc
