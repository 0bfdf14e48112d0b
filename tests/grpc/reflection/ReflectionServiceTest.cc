// grpc::ReflectionService: each kind of request answered from generated and
// run-time pools (files self-contained with their imports, symbols,
// extensions, errors), and the bidirectional call through a fake
// ServerCall (answers in order, back-pressure).
#include "net/grpc/reflection/ReflectionService.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/grpc/gen/FakeServerCall.h"
#include "tests/grpc/gen/kinds.libnet.h"
#include "tests/grpc/reflection/options.libnet.h"

namespace {

namespace gp = google::protobuf;
using libnet::grpc::ReflectionService;
using libnet::grpc::StatusCode;
using libnet::grpc::testing::FakeServerCall;
using Request = ReflectionService::Request;
using Response = ReflectionService::Response;

std::vector<gp::FileDescriptorProto> files(const Response& response) {
  std::vector<gp::FileDescriptorProto> result;
  for (const auto& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    result.emplace_back();
    EXPECT_TRUE(result.back().ParseFromString(bytes));
  }
  return result;
}

// A client's view: the files of one answer, and nothing else, build a pool.
std::unique_ptr<gp::DescriptorPool> poolOf(const Response& response) {
  auto pool = std::make_unique<gp::DescriptorPool>();
  for (const auto& file : files(response)) {
    EXPECT_NE(pool->BuildFile(file), nullptr) << file.name() << " before its imports";
  }
  return pool;
}

void expectError(const Response& response, StatusCode code) {
  ASSERT_TRUE(response.has_error_response()) << response.DebugString();
  EXPECT_EQ(response.error_response().error_code(), static_cast<int>(code));
  EXPECT_FALSE(response.error_response().error_message().empty());
}

TEST(ReflectionServiceTest, ListsTheServicesAddedAndItself) {
  ReflectionService reflection;
  libnet::test::gen::Kinds::Service kinds;
  libnet::test::gen::Echo::CoroService echo;
  reflection.addService(kinds);
  reflection.addService(echo);
  reflection.addService(kinds);  // once only
  reflection.addService(reflection);
  Request request;
  request.set_host("localhost");
  request.set_list_services("*");
  const Response response = reflection.answer(request);
  EXPECT_EQ(response.valid_host(), "localhost");
  EXPECT_EQ(response.original_request().list_services(), "*");
  std::vector<std::string> names;
  for (const auto& service : response.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"grpc.reflection.v1alpha.ServerReflection",
                                             "libnet.test.gen.Kinds", "libnet.test.gen.Echo"}));
}

TEST(ReflectionServiceTest, FileByNameComesWithItsImports) {
  ReflectionService reflection;
  Request request;
  request.set_file_by_filename("tests/grpc/gen/kinds.proto");
  const Response response = reflection.answer(request);
  std::vector<std::string> names;
  for (const auto& file : files(response)) names.push_back(file.name());
  ASSERT_FALSE(names.empty()) << response.DebugString();
  EXPECT_EQ(names.back(), "tests/grpc/gen/kinds.proto");
  for (const char* import : {"google/protobuf/empty.proto", "google/protobuf/timestamp.proto",
                             "tests/grpc/gen/common/common.proto"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), import), names.end()) << import;
  }
  auto pool = poolOf(response);
  const gp::ServiceDescriptor* kinds = pool->FindServiceByName("libnet.test.gen.Kinds");
  ASSERT_NE(kinds, nullptr);
  const gp::MethodDescriptor* method = kinds->FindMethodByName("ServerStream");
  ASSERT_NE(method, nullptr);
  EXPECT_EQ(method->input_type()->full_name(), "libnet.test.common.Shared.Nested");
  EXPECT_TRUE(method->server_streaming());
}

TEST(ReflectionServiceTest, FileContainingSymbol) {
  ReflectionService reflection;
  for (const auto& [symbol, file] : std::vector<std::pair<std::string, std::string>>{
           {"libnet.test.gen.Kinds", "tests/grpc/gen/kinds.proto"},
           {"libnet.test.gen.Kinds.Bidi", "tests/grpc/gen/kinds.proto"},
           {"libnet.test.gen.Outer.Inner", "tests/grpc/gen/kinds.proto"},
           {"libnet.test.common.Shared.Nested", "tests/grpc/gen/common/common.proto"},
           {"grpc.reflection.v1alpha.ServerReflection", "net/grpc/reflection/reflection.proto"},
       }) {
    Request request;
    request.set_file_containing_symbol(symbol);
    const auto found = files(reflection.answer(request));
    ASSERT_FALSE(found.empty()) << symbol;
    EXPECT_EQ(found.back().name(), file) << symbol;
  }
}

TEST(ReflectionServiceTest, ServiceOfARunTimePoolIsFound) {
  gp::DescriptorPool pool;
  gp::FileDescriptorProto file;
  file.set_name("runtime.proto");
  file.set_package("rt");
  file.add_message_type()->set_name("Bytes");
  auto* method = file.add_service();
  method->set_name("Raw");
  auto* call = method->add_method();
  call->set_name("Call");
  call->set_input_type(".rt.Bytes");
  call->set_output_type(".rt.Bytes");
  const gp::FileDescriptor* built = pool.BuildFile(file);
  ASSERT_NE(built, nullptr);

  class Raw : public libnet::grpc::Service {
   public:
    explicit Raw(const gp::ServiceDescriptor* d) : Service(d) {}
  } raw(built->service(0));
  ReflectionService reflection;
  reflection.addService(raw);
  Request request;
  request.set_file_containing_symbol("rt.Raw.Call");
  const auto found = files(reflection.answer(request));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name(), "runtime.proto");
}

TEST(ReflectionServiceTest, Extensions) {
  ReflectionService reflection;
  Request request;
  request.set_all_extension_numbers_of_type("google.protobuf.MessageOptions");
  Response response = reflection.answer(request);
  ASSERT_TRUE(response.has_all_extension_numbers_response()) << response.DebugString();
  const auto& numbers = response.all_extension_numbers_response().extension_number();
  EXPECT_NE(std::find(numbers.begin(), numbers.end(), 50001), numbers.end());

  request.mutable_file_containing_extension()->set_containing_type(
      "google.protobuf.MessageOptions");
  request.mutable_file_containing_extension()->set_extension_number(50001);
  const auto found = files(reflection.answer(request));
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.back().name(), "tests/grpc/reflection/options.proto");

  request.mutable_file_containing_extension()->set_extension_number(50002);
  expectError(reflection.answer(request), StatusCode::kNotFound);
}

TEST(ReflectionServiceTest, UnknownNamesAreNotFound) {
  ReflectionService reflection;
  Request request;
  request.set_file_by_filename("no/such.proto");
  expectError(reflection.answer(request), StatusCode::kNotFound);
  request.set_file_containing_symbol("no.such.Symbol");
  expectError(reflection.answer(request), StatusCode::kNotFound);
  request.set_all_extension_numbers_of_type("no.such.Type");
  expectError(reflection.answer(request), StatusCode::kNotFound);
  expectError(reflection.answer(Request()), StatusCode::kInvalidArgument);
}

TEST(ReflectionServiceTest, CallAnswersEachRequestInOrder) {
  ReflectionService reflection;
  const auto& method = reflection.methods().at(0);
  EXPECT_EQ(method.path, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo");
  EXPECT_EQ(method.kind, libnet::grpc::MethodKind::kBidiStreaming);
  auto call = std::make_shared<FakeServerCall>(method.path);
  method.handler(call);
  Request list;
  list.set_list_services("");
  Request unknown;
  unknown.set_file_containing_symbol("no.Such");
  Request file;
  file.set_file_by_filename("net/grpc/reflection/reflection.proto");
  for (const Request* request : {&list, &unknown, &file}) {
    ASSERT_TRUE(call->deliver(request->SerializeAsString()));
  }
  ASSERT_EQ(call->written().size(), 3u);
  std::vector<Response> responses(3);
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(responses[i].ParseFromString(call->written()[i]));
  EXPECT_TRUE(responses[0].has_list_services_response());
  EXPECT_TRUE(responses[1].has_error_response());
  EXPECT_TRUE(responses[2].has_file_descriptor_response());
  EXPECT_FALSE(call->status()) << "the call goes on after an error response";
  ASSERT_TRUE(call->halfClose());
  ASSERT_TRUE(call->status());
  EXPECT_TRUE(call->status()->ok());
}

// A client that does not read the answers is not read either.
TEST(ReflectionServiceTest, ClientThatDoesNotReadIsPaused) {
  ReflectionService reflection;
  auto call = std::make_shared<FakeServerCall>("/r");
  call->setHighWater(2);
  reflection.methods().at(0).handler(call);
  Request request;
  request.set_list_services("");
  ASSERT_TRUE(call->deliver(request.SerializeAsString()));
  EXPECT_FALSE(call->paused());
  ASSERT_TRUE(call->deliver(request.SerializeAsString()));
  EXPECT_TRUE(call->paused());
  call->drain();
  EXPECT_FALSE(call->paused());
  ASSERT_TRUE(call->halfClose());
}

}  // namespace
