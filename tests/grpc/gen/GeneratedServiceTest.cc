// The classes protoc-gen-libnet generates (net/grpc/plugin): descriptors,
// the methods each Service registers (names, paths, kinds), the handler
// types (nested messages, another package, well-known types, no package),
// and the calls they make, driven through a fake ServerCall.
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "tests/grpc/gen/FakeServerCall.h"
#include "tests/grpc/gen/kinds.libnet.h"
#include "tests/grpc/gen/nopackage.libnet.h"
#include "tests/grpc/gen/wkt_only.libnet.h"

namespace {

using libnet::grpc::MethodKind;
using libnet::grpc::ServerStreamPtr;
using libnet::grpc::StatusCode;
using libnet::grpc::testing::FakeServerCall;
using libnet::test::common::Shared;
using libnet::test::gen::Echo;
using libnet::test::gen::Kinds;
using libnet::test::gen::Outer;

struct Expected {
  std::string name;
  std::string path;
  MethodKind kind;
};

void expectMethods(const libnet::grpc::Service& service, const std::vector<Expected>& expected) {
  ASSERT_EQ(service.methods().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& method = service.methods()[i];
    EXPECT_EQ(method.name, expected[i].name);
    EXPECT_EQ(method.path, expected[i].path);
    EXPECT_EQ(method.kind, expected[i].kind) << method.name;
    EXPECT_TRUE(method.handler) << method.name;
  }
}

const std::vector<Expected> kKindsMethods = {
    {"Unary", "/libnet.test.gen.Kinds/Unary", MethodKind::kUnary},
    {"ServerStream", "/libnet.test.gen.Kinds/ServerStream", MethodKind::kServerStreaming},
    {"ClientStream", "/libnet.test.gen.Kinds/ClientStream", MethodKind::kClientStreaming},
    {"Bidi", "/libnet.test.gen.Kinds/Bidi", MethodKind::kBidiStreaming},
};

// The handler types name protoc's C++ classes: nested (Outer.Inner is
// Outer_Inner, and Outer::Inner), from another package, well-known.
static_assert(std::is_same_v<decltype(&Kinds::Service::Unary),
                             void (Kinds::Service::*)(ServerStreamPtr<Outer::Inner, Outer>)>);
static_assert(std::is_same_v<decltype(&Kinds::Service::ServerStream),
                             void (Kinds::Service::*)(ServerStreamPtr<Shared::Nested, Outer>)>);
static_assert(
    std::is_same_v<decltype(&Kinds::Service::ClientStream),
                   void (Kinds::Service::*)(ServerStreamPtr<Outer, google::protobuf::Empty>)>);
static_assert(std::is_same_v<decltype(&Kinds::Service::Bidi),
                             void (Kinds::Service::*)(ServerStreamPtr<Shared, Shared>)>);
static_assert(
    std::is_same_v<decltype(&Bare::Service::Ping),
                   void (Bare::Service::*)(ServerStreamPtr<google::protobuf::Empty, ::PingReply>)>);
static_assert(
    std::is_same_v<
        decltype(&libnet::test::wkt::Clock::CoroService::Ticks),
        libnet::coro::Task<libnet::grpc::Status> (libnet::test::wkt::Clock::CoroService::*)(
            libnet::grpc::CoroStream<google::protobuf::Duration, google::protobuf::Timestamp>&)>);

TEST(GeneratedServiceTest, DescriptorsAreTheServicesOfTheGeneratedPool) {
  ASSERT_NE(Kinds::descriptor(), nullptr);
  EXPECT_EQ(Kinds::descriptor()->full_name(), "libnet.test.gen.Kinds");
  EXPECT_EQ(Kinds::descriptor()->file()->name(), "tests/grpc/gen/kinds.proto");
  EXPECT_EQ(Kinds::descriptor()->method_count(), 4);
  ASSERT_NE(Echo::descriptor(), nullptr);
  EXPECT_EQ(Echo::descriptor()->full_name(), "libnet.test.gen.Echo");
  ASSERT_NE(Bare::descriptor(), nullptr);
  EXPECT_EQ(Bare::descriptor()->full_name(), "Bare");
  // The file defines no message: its descriptor is in the pool only
  // because the library keeps its .pb.cc linked.
  ASSERT_NE(libnet::test::wkt::Clock::descriptor(), nullptr);
  EXPECT_EQ(libnet::test::wkt::Clock::descriptor()->full_name(), "libnet.test.wkt.Clock");
}

TEST(GeneratedServiceTest, ServiceRegistersEveryMethodWithItsKind) {
  Kinds::Service service;
  EXPECT_EQ(service.name(), "libnet.test.gen.Kinds");
  EXPECT_EQ(service.descriptor(), Kinds::descriptor());
  expectMethods(service, kKindsMethods);
  Echo::Service echo;
  expectMethods(echo, {{"Say", "/libnet.test.gen.Echo/Say", MethodKind::kUnary}});
  Bare::Service bare;
  expectMethods(bare, {{"Ping", "/Bare/Ping", MethodKind::kUnary}});
}

TEST(GeneratedServiceTest, CoroServiceRegistersEveryMethodWithItsKind) {
  Kinds::CoroService service;
  EXPECT_EQ(service.name(), "libnet.test.gen.Kinds");
  expectMethods(service, kKindsMethods);
  libnet::test::wkt::Clock::CoroService clock;
  expectMethods(clock, {{"Now", "/libnet.test.wkt.Clock/Now", MethodKind::kUnary},
                        {"Ticks", "/libnet.test.wkt.Clock/Ticks", MethodKind::kServerStreaming}});
}

// A method not overridden answers UNIMPLEMENTED, whatever its kind: the
// unary and server-streaming ones once their request has come.
TEST(GeneratedServiceTest, MethodsNotOverriddenFinishUnimplemented) {
  Kinds::Service service;
  for (const auto& method : service.methods()) {
    auto call = std::make_shared<FakeServerCall>(method.path);
    method.handler(call);
    if (libnet::grpc::takesOneRequest(method.kind)) {
      EXPECT_FALSE(call->status()) << method.name << " answered before its request";
      ASSERT_TRUE(call->deliver(Outer::Inner().SerializeAsString())) << method.name;
      ASSERT_TRUE(call->halfClose()) << method.name;
    }
    ASSERT_TRUE(call->status()) << method.name;
    EXPECT_EQ(call->status()->code(), StatusCode::kUnimplemented) << method.name;
    EXPECT_TRUE(call->written().empty()) << method.name;
  }
}

class EchoImpl : public Echo::Service {
 public:
  void Say(ServerStreamPtr<Outer::Inner, Outer::Inner> call) override {
    Outer::Inner reply;
    reply.set_name(call->request().name() + "!");
    call->finish(reply);
  }
};

TEST(GeneratedServiceTest, OverriddenUnaryMethodGetsTheTypedRequest) {
  EchoImpl service;
  auto call = std::make_shared<FakeServerCall>("/libnet.test.gen.Echo/Say");
  service.methods().at(0).handler(call);
  Outer::Inner request;
  request.set_name("hello");
  ASSERT_TRUE(call->deliver(request.SerializeAsString()));
  ASSERT_TRUE(call->halfClose());
  ASSERT_TRUE(call->status());
  EXPECT_TRUE(call->status()->ok()) << call->status()->message();
  ASSERT_EQ(call->written().size(), 1u);
  Outer::Inner reply;
  ASSERT_TRUE(reply.ParseFromString(call->written()[0]));
  EXPECT_EQ(reply.name(), "hello!");
}

class BidiImpl : public Kinds::Service {
 public:
  void Bidi(ServerStreamPtr<Shared, Shared> call) override {
    call->onMessage([call](Shared message) {
      message.set_id(message.id() + 1);
      call->write(message);
    });
    call->onHalfClose([call] { call->finish(libnet::grpc::Status()); });
  }
};

TEST(GeneratedServiceTest, OverriddenBidiMethodStreamsBothWays) {
  BidiImpl service;
  const auto& method = service.methods().at(3);
  ASSERT_EQ(method.name, "Bidi");
  auto call = std::make_shared<FakeServerCall>(method.path);
  method.handler(call);
  for (int64_t id : {1, 10, 100}) {
    Shared message;
    message.set_id(id);
    message.mutable_nested()->set_text("n");
    ASSERT_TRUE(call->deliver(message.SerializeAsString()));
  }
  EXPECT_FALSE(call->status());
  ASSERT_TRUE(call->halfClose());
  ASSERT_TRUE(call->status());
  EXPECT_TRUE(call->status()->ok());
  ASSERT_EQ(call->written().size(), 3u);
  std::vector<int64_t> ids;
  for (const auto& bytes : call->written()) {
    Shared reply;
    ASSERT_TRUE(reply.ParseFromString(bytes));
    EXPECT_EQ(reply.nested().text(), "n");
    ids.push_back(reply.id());
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 11, 101}));
}

}  // namespace
