// grpc::HealthService through fake calls: Check, Watch (first status,
// changes only, SERVICE_UNKNOWN, cancel), a watcher that does not read, and
// statuses set from several threads while calls run.
#include "net/grpc/health/HealthService.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/grpc/gen/FakeServerCall.h"

namespace {

using libnet::grpc::HealthService;
using libnet::grpc::ServingStatus;
using libnet::grpc::StatusCode;
using libnet::grpc::testing::FakeServerCall;
using Response = HealthService::Response;

const libnet::grpc::Service::Method& method(const HealthService& service, const std::string& name) {
  for (const auto& m : service.methods()) {
    if (m.name == name) return m;
  }
  throw std::runtime_error("no method " + name);
}

// Starts `name` for `service` as the server would: the handler, then the
// one request and the client's half-close.
std::shared_ptr<FakeServerCall> start(HealthService& health, const std::string& name,
                                      const std::string& service, size_t highWater = SIZE_MAX) {
  const auto& m = method(health, name);
  auto call = std::make_shared<FakeServerCall>(m.path);
  call->setHighWater(highWater);
  m.handler(call);
  HealthService::Request request;
  request.set_service(service);
  EXPECT_TRUE(call->deliver(request.SerializeAsString()));
  EXPECT_TRUE(call->halfClose());
  return call;
}

std::vector<Response::ServingStatus> statuses(const FakeServerCall& call) {
  std::vector<Response::ServingStatus> result;
  for (const auto& bytes : call.written()) {
    Response response;
    EXPECT_TRUE(response.ParseFromString(bytes));
    result.push_back(response.status());
  }
  return result;
}

TEST(HealthServiceTest, RegistersCheckAndWatch) {
  HealthService health;
  EXPECT_EQ(health.name(), "grpc.health.v1.Health");
  ASSERT_EQ(health.methods().size(), 2u);
  EXPECT_EQ(method(health, "Check").path, "/grpc.health.v1.Health/Check");
  EXPECT_EQ(method(health, "Check").kind, libnet::grpc::MethodKind::kUnary);
  EXPECT_EQ(method(health, "Watch").path, "/grpc.health.v1.Health/Watch");
  EXPECT_EQ(method(health, "Watch").kind, libnet::grpc::MethodKind::kServerStreaming);
}

TEST(HealthServiceTest, CheckAnswersTheStatusSetOrNotFound) {
  HealthService health;
  auto server = start(health, "Check", "");
  ASSERT_TRUE(server->status());
  EXPECT_TRUE(server->status()->ok());
  EXPECT_EQ(statuses(*server), std::vector{Response::SERVING});

  auto unknown = start(health, "Check", "pkg.Unknown");
  ASSERT_TRUE(unknown->status());
  EXPECT_EQ(unknown->status()->code(), StatusCode::kNotFound);
  EXPECT_TRUE(unknown->written().empty());

  health.setStatus("pkg.Greeter", ServingStatus::kNotServing);
  auto greeter = start(health, "Check", "pkg.Greeter");
  EXPECT_EQ(statuses(*greeter), std::vector{Response::NOT_SERVING});
  health.setStatus("pkg.Greeter", ServingStatus::kServing);
  EXPECT_EQ(statuses(*start(health, "Check", "pkg.Greeter")), std::vector{Response::SERVING});
  health.clearStatus("pkg.Greeter");
  EXPECT_EQ(start(health, "Check", "pkg.Greeter")->status()->code(), StatusCode::kNotFound);
}

TEST(HealthServiceTest, WatchSendsTheStatusThenEachChange) {
  HealthService health;
  auto watch = start(health, "Watch", "pkg.Greeter");
  EXPECT_EQ(statuses(*watch), std::vector{Response::SERVICE_UNKNOWN});
  health.setStatus("pkg.Greeter", ServingStatus::kServing);
  health.setStatus("pkg.Greeter", ServingStatus::kServing);   // no change: nothing sent
  health.setStatus("pkg.Other", ServingStatus::kNotServing);  // another service
  health.setStatus("pkg.Greeter", ServingStatus::kNotServing);
  health.clearStatus("pkg.Greeter");
  EXPECT_EQ(statuses(*watch), (std::vector{Response::SERVICE_UNKNOWN, Response::SERVING,
                                           Response::NOT_SERVING, Response::SERVICE_UNKNOWN}));
  EXPECT_FALSE(watch->status()) << "a watch runs until the client cancels";

  watch->cancel();
  health.setStatus("pkg.Greeter", ServingStatus::kServing);
  EXPECT_EQ(watch->written().size(), 4u);
}

// A watcher past its high-water mark is sent nothing more until it drains,
// then only the latest status.
TEST(HealthServiceTest, WatcherThatDoesNotReadGetsOnlyTheLatestStatus) {
  HealthService health;
  auto watch = start(health, "Watch", "", /*highWater=*/1);
  EXPECT_EQ(statuses(*watch), std::vector{Response::SERVING});
  for (int i = 0; i < 1000; ++i) {
    health.setStatus("", i % 2 == 0 ? ServingStatus::kNotServing : ServingStatus::kServing);
  }
  health.setStatus("", ServingStatus::kNotServing);
  EXPECT_EQ(watch->written().size(), 1u);
  watch->drain();
  EXPECT_EQ(statuses(*watch), (std::vector{Response::SERVING, Response::NOT_SERVING}));
  health.setStatus("", ServingStatus::kServing);
  EXPECT_EQ(statuses(*watch),
            (std::vector{Response::SERVING, Response::NOT_SERVING, Response::SERVING}));
}

TEST(HealthServiceTest, DestroyingTheServiceEndsOpenWatches) {
  std::shared_ptr<FakeServerCall> watch;
  {
    HealthService health;
    watch = start(health, "Watch", "");
  }
  ASSERT_TRUE(watch->status());
  EXPECT_EQ(watch->status()->code(), StatusCode::kUnavailable);
}

// Statuses set from other threads while calls run on this one; the watch
// sees a valid sequence ending with the last status set.
TEST(HealthServiceTest, StatusesSetFromOtherThreads) {
  HealthService health;
  auto watch = start(health, "Watch", "pkg.S");
  std::vector<std::thread> setters;
  for (int t = 0; t < 4; ++t) {
    setters.emplace_back([&health, t] {
      for (int i = 0; i < 200; ++i) {
        health.setStatus("pkg.S",
                         (i + t) % 2 == 0 ? ServingStatus::kServing : ServingStatus::kNotServing);
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    auto check = start(health, "Check", "");
    ASSERT_TRUE(check->status());
    EXPECT_TRUE(check->status()->ok());
  }
  for (auto& setter : setters) setter.join();
  health.setStatus("pkg.S", ServingStatus::kNotServing);
  auto seen = statuses(*watch);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), Response::NOT_SERVING);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_NE(seen[i], seen[i - 1]) << i;
  watch->cancel();
}

}  // namespace
