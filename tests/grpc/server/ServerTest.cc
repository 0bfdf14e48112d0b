// grpc::Service and grpc::Server's registration: names, paths and what they
// refuse; on both backends (the Server stands on an HttpServer).
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/grpc/Server.h"
#include "net/grpc/Service.h"
#include "net/http/HttpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet::grpc {
namespace {

const google::protobuf::ServiceDescriptor* descriptor() {
  static google::protobuf::DescriptorPool pool;
  static const google::protobuf::ServiceDescriptor* service = [] {
    google::protobuf::FileDescriptorProto file;
    file.set_name("server_test.proto");
    file.set_package("pkg.sub");
    file.add_message_type()->set_name("M");
    google::protobuf::MethodDescriptorProto* method = file.add_service()->add_method();
    file.mutable_service(0)->set_name("Svc");
    method->set_name("Call");
    method->set_input_type(".pkg.sub.M");
    method->set_output_type(".pkg.sub.M");
    return pool.BuildFile(file)->service(0);
  }();
  return service;
}

class RawService : public Service {
 public:
  explicit RawService(const google::protobuf::ServiceDescriptor* d) : Service(d) {}
  void add(std::string_view name) {
    addRawMethod(name, MethodKind::kUnary, [](const ServerCallPtr&) {});
  }
};

TEST(ServiceTest, NamedByItsDescriptorWithMethodPaths) {
  RawService service(descriptor());
  EXPECT_EQ(service.name(), "pkg.sub.Svc");
  EXPECT_EQ(service.descriptor(), descriptor());
  service.add("Call");
  service.add("Other");
  ASSERT_EQ(service.methods().size(), 2U);
  EXPECT_EQ(service.methods()[0].path, "/pkg.sub.Svc/Call");
  EXPECT_EQ(service.methods()[1].name, "Other");
  EXPECT_EQ(service.methods()[1].kind, MethodKind::kUnary);
}

TEST(ServiceTest, RefusesANullDescriptorAndATwiceAddedMethod) {
  EXPECT_THROW(RawService(nullptr), std::invalid_argument);
  RawService service(descriptor());
  service.add("Call");
  EXPECT_THROW(service.add("Call"), std::invalid_argument);
}

class ServerTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override { LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam()); }
};

TEST_P(ServerTest, RefusesTwoServicesOfOneNameAndBadOptions) {
  EventLoop loop(GetParam());
  http::HttpServer http(&loop, InetAddress(0, true), "grpc");
  Server server(http, {});
  RawService first(descriptor());
  RawService second(descriptor());
  server.addService(&first);
  EXPECT_THROW(server.addService(&second), std::invalid_argument);
  EXPECT_THROW(server.addService(nullptr), std::invalid_argument);
  EXPECT_EQ(server.options().maxReceiveMessageBytes, 4U * 1024 * 1024);
  http::HttpServer other(&loop, InetAddress(0, true), "grpc2");
  EXPECT_THROW(Server(other, {.maxReceiveMessageBytes = 0}), std::invalid_argument);
}

TEST_P(ServerTest, KeepsTheRouteOfOtherRequests) {
  EventLoop loop(GetParam());
  http::HttpServer http(&loop, InetAddress(0, true), "grpc");
  http.setRouter([](const http::HttpRequest&) { return http::HttpServer::Route::kAsync; });
  Server server(http, {});
  http::HttpRequest grpcHead;
  ASSERT_EQ(grpcHead.assign(http::Method::kPost, http::Version::kHttp2, "/pkg.sub.Svc/Call"), 0);
  grpcHead.appendHeader("content-type", "application/grpc+proto");
  EXPECT_EQ(http.router()(grpcHead), http::HttpServer::Route::kStreamedBody);
  http::HttpRequest page;
  ASSERT_EQ(page.assign(http::Method::kGet, http::Version::kHttp2, "/index.html"), 0);
  EXPECT_EQ(http.router()(page), http::HttpServer::Route::kAsync);
  http::HttpRequest overHttp1;
  ASSERT_EQ(overHttp1.assign(http::Method::kPost, http::Version::kHttp11, "/pkg.sub.Svc/Call"), 0);
  overHttp1.appendHeader("content-type", "application/grpc");
  EXPECT_EQ(http.router()(overHttp1), http::HttpServer::Route::kAsync);
  http::HttpRequest lookalike;
  ASSERT_EQ(lookalike.assign(http::Method::kPost, http::Version::kHttp2, "/x"), 0);
  lookalike.appendHeader("content-type", "application/grpcx");
  EXPECT_EQ(http.router()(lookalike), http::HttpServer::Route::kAsync);
}

INSTANTIATE_TEST_SUITE_P(Backends, ServerTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         libnet::test::pollerName);

}  // namespace
}  // namespace libnet::grpc
