// interop_client: libnet's client of grpc.testing.TestService
// (examples/grpc/protos/test.proto) running one case of grpc's interop test
// descriptions per invocation, with the flags of grpc's interop clients, in
// coroutine style.
//
//   interop_client --server_port PORT --test_case CASE [--server_host HOST]
//                  [--use_tls true [--ca_file FILE] [--server_host_override NAME]]
//                  [--backend epoll|uring|auto]
//
// Exit 0: the case passed; 1: it failed (why on stderr); 2: bad flags or an
// unknown case.
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/Flags.h"
#include "examples/grpc/protos/test.libnet.h"
#include "net/EventLoop.h"
#include "net/coro/Spawn.h"
#include "net/coro/Task.h"
#include "net/grpc/Channel.h"
#include "net/tls/TlsContext.h"

namespace {

using grpc::testing::Empty;
using grpc::testing::Payload;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using grpc::testing::TestService;
using grpc::testing::UnimplementedService;
using libnet::coro::Task;
using libnet::grpc::ClientCallOptions;
using libnet::grpc::Metadata;
using libnet::grpc::Status;
using libnet::grpc::StatusCode;

const char kEchoInitial[] = "x-grpc-test-echo-initial";
const char kEchoTrailing[] = "x-grpc-test-echo-trailing-bin";
const char kInitialValue[] = "test_initial_metadata_value";
const char kTrailingValue[] = "\xab\xab\xab";
constexpr int kLargeRequest = 271828;
constexpr int kLargeResponse = 314159;
const int kStreamRequests[] = {27182, 8, 1828, 45904};
const int kStreamResponses[] = {31415, 9, 2653, 58979};

// Thrown by a case that fails: what differed.
class CaseFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Stubs {
  TestService::Stub test;
  UnimplementedService::Stub unimplemented;
};

void expect(bool condition, const std::string& what) {
  if (!condition) throw CaseFailure(what);
}

void expectCode(const Status& status, StatusCode code, const std::string& call) {
  expect(status.code() == code, call + ": " + status.toString() + ", expected " +
                                    std::string(libnet::grpc::statusCodeName(code)));
}

void expectOk(const Status& status, const std::string& call) {
  expectCode(status, StatusCode::kOk, call);
}

void expectBody(const Payload& payload, int size, const std::string& what) {
  expect(payload.body() == std::string(static_cast<size_t>(size), '\0'),
         what + ": payload of " + std::to_string(payload.body().size()) + " bytes, expected " +
             std::to_string(size) + " zeros");
}

std::string zeros(int n) { return std::string(static_cast<size_t>(n), '\0'); }

SimpleRequest largeRequest() {
  SimpleRequest request;
  request.set_response_size(kLargeResponse);
  request.mutable_payload()->set_body(zeros(kLargeRequest));
  return request;
}

StreamingOutputCallRequest pingRequest(int requestSize, int responseSize) {
  StreamingOutputCallRequest request;
  request.add_response_parameters()->set_size(responseSize);
  if (requestSize > 0) request.mutable_payload()->set_body(zeros(requestSize));
  return request;
}

Task<> emptyUnary(Stubs& stubs) {
  auto reply = co_await stubs.test.EmptyCall(Empty());
  expectOk(reply.status(), "EmptyCall");
  expect(reply->ByteSizeLong() == 0, "EmptyCall: the response is not empty");
}

Task<> largeUnary(Stubs& stubs) {
  auto reply = co_await stubs.test.UnaryCall(largeRequest());
  expectOk(reply.status(), "UnaryCall");
  expectBody(reply->payload(), kLargeResponse, "UnaryCall");
}

Task<> clientCompressedUnary(Stubs& stubs) {
  SimpleRequest request = largeRequest();
  request.mutable_expect_compressed()->set_value(true);
  auto probe = co_await stubs.test.UnaryCall(request);
  expectCode(probe.status(), StatusCode::kInvalidArgument,
             "the probe (uncompressed, expect_compressed true)");
  for (const bool compressed : {true, false}) {
    request.mutable_expect_compressed()->set_value(compressed);
    auto reply = co_await stubs.test.UnaryCall(request, ClientCallOptions{.compress = compressed});
    const std::string what = compressed ? "compressed UnaryCall" : "uncompressed UnaryCall";
    expectOk(reply.status(), what);
    expectBody(reply->payload(), kLargeResponse, what);
  }
}

Task<> serverCompressedUnary(Stubs& stubs) {
  for (const bool compressed : {true, false}) {
    SimpleRequest request = largeRequest();
    request.mutable_response_compressed()->set_value(compressed);
    auto reply = co_await stubs.test.UnaryCall(request);
    const std::string what = compressed ? "UnaryCall (response_compressed true)"
                                        : "UnaryCall (response_compressed false)";
    expectOk(reply.status(), what);
    expectBody(reply->payload(), kLargeResponse, what);
  }
}

Task<> clientStreaming(Stubs& stubs) {
  auto call = stubs.test.StreamingInputCall();
  for (const int size : kStreamRequests) {
    StreamingInputCallRequest request;
    request.mutable_payload()->set_body(zeros(size));
    expect(co_await call.write(request), "StreamingInputCall: a write failed");
  }
  call.halfClose();
  auto response = co_await call.read();
  expectOk(co_await call.finish(), "StreamingInputCall");
  expect(response && response->aggregated_payload_size() == 74922,
         "StreamingInputCall: aggregated_payload_size is not 74922");
}

Task<> clientCompressedStreaming(Stubs& stubs) {
  StreamingInputCallRequest request;
  request.mutable_expect_compressed()->set_value(true);
  request.mutable_payload()->set_body(zeros(27182));
  {
    auto probe = stubs.test.StreamingInputCall();
    co_await probe.write(request);
    probe.halfClose();
    co_await probe.read();
    expectCode(co_await probe.finish(), StatusCode::kInvalidArgument,
               "the probe (uncompressed, expect_compressed true)");
  }
  auto call = stubs.test.StreamingInputCall({.compress = true});
  expect(co_await call.write(request), "StreamingInputCall: the compressed write failed");
  request.mutable_expect_compressed()->set_value(false);
  request.mutable_payload()->set_body(zeros(45904));
  expect(co_await call.write(request, true), "StreamingInputCall: the uncompressed write failed");
  call.halfClose();
  auto response = co_await call.read();
  expectOk(co_await call.finish(), "StreamingInputCall");
  expect(response && response->aggregated_payload_size() == 73086,
         "StreamingInputCall: aggregated_payload_size is not 73086");
}

Task<> serverStreamingSizes(Stubs& stubs, std::vector<int> sizes, std::vector<bool> compressed) {
  StreamingOutputCallRequest request;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto* parameters = request.add_response_parameters();
    parameters->set_size(sizes[i]);
    if (!compressed.empty()) parameters->mutable_compressed()->set_value(compressed[i]);
  }
  auto call = stubs.test.StreamingOutputCall(request);
  size_t count = 0;
  while (std::optional<StreamingOutputCallResponse> response = co_await call.read()) {
    expect(count < sizes.size(), "StreamingOutputCall: too many responses");
    expectBody(response->payload(), sizes[count], "response " + std::to_string(count));
    ++count;
  }
  expectOk(co_await call.finish(), "StreamingOutputCall");
  expect(count == sizes.size(), "StreamingOutputCall: " + std::to_string(count) + " responses");
}

// Made outside the coroutines: GCC 12 cannot take a braced list inside one.
std::vector<int> plainSizes() {
  return std::vector<int>(std::begin(kStreamResponses), std::end(kStreamResponses));
}
std::vector<int> compressedSizes() { return {31415, 92653}; }
std::vector<bool> compressedFlags() { return {true, false}; }

Task<> serverStreaming(Stubs& stubs) {
  co_await serverStreamingSizes(stubs, plainSizes(), std::vector<bool>());
}

Task<> serverCompressedStreaming(Stubs& stubs) {
  co_await serverStreamingSizes(stubs, compressedSizes(), compressedFlags());
}

Task<> pingPong(Stubs& stubs) {
  auto call = stubs.test.FullDuplexCall();
  for (size_t i = 0; i < std::size(kStreamRequests); ++i) {
    expect(co_await call.write(pingRequest(kStreamRequests[i], kStreamResponses[i])),
           "FullDuplexCall: write " + std::to_string(i) + " failed");
    auto response = co_await call.read();
    expect(response.has_value(), "FullDuplexCall: no response " + std::to_string(i));
    expectBody(response->payload(), kStreamResponses[i], "response " + std::to_string(i));
  }
  call.halfClose();
  expect(!(co_await call.read()), "FullDuplexCall: more than four responses");
  expectOk(co_await call.finish(), "FullDuplexCall");
}

Task<> emptyStream(Stubs& stubs) {
  auto call = stubs.test.FullDuplexCall();
  call.halfClose();
  expect(!(co_await call.read()), "FullDuplexCall: a response to no request");
  expectOk(co_await call.finish(), "FullDuplexCall");
}

Task<> timeoutOnSleepingServer(Stubs& stubs) {
  auto call = stubs.test.FullDuplexCall({.timeout = std::chrono::milliseconds(1)});
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body(zeros(27182));
  co_await call.write(request);
  while (co_await call.read()) {
  }
  expectCode(co_await call.finish(), StatusCode::kDeadlineExceeded, "FullDuplexCall with 1 ms");
}

Task<> cancelAfterBegin(Stubs& stubs) {
  auto call = stubs.test.StreamingInputCall();
  call.cancel();
  expectCode(co_await call.finish(), StatusCode::kCancelled, "StreamingInputCall cancelled");
}

Task<> cancelAfterFirstResponse(Stubs& stubs) {
  auto call = stubs.test.FullDuplexCall();
  expect(co_await call.write(pingRequest(27182, 31415)), "FullDuplexCall: the write failed");
  auto response = co_await call.read();
  expect(response.has_value(), "FullDuplexCall: no first response");
  expectBody(response->payload(), 31415, "the first response");
  call.cancel();
  expectCode(co_await call.finish(), StatusCode::kCancelled, "FullDuplexCall cancelled");
}

Task<> expectEchoedStatus(Stubs& stubs, const std::string& message, bool duplexToo) {
  SimpleRequest request;
  request.mutable_response_status()->set_code(2);
  request.mutable_response_status()->set_message(message);
  auto unary = co_await stubs.test.UnaryCall(request);
  expectCode(unary.status(), StatusCode::kUnknown, "UnaryCall");
  expect(unary.status().message() == message, "UnaryCall: the message differs");
  if (!duplexToo) co_return;
  auto call = stubs.test.FullDuplexCall();
  StreamingOutputCallRequest streamRequest;
  *streamRequest.mutable_response_status() = request.response_status();
  co_await call.write(streamRequest);
  call.halfClose();
  while (co_await call.read()) {
  }
  const Status duplex = co_await call.finish();
  expectCode(duplex, StatusCode::kUnknown, "FullDuplexCall");
  expect(duplex.message() == message, "FullDuplexCall: the message differs");
}

Task<> statusCodeAndMessage(Stubs& stubs) {
  co_await expectEchoedStatus(stubs, "test status message", true);
}

Task<> specialStatusMessage(Stubs& stubs) {
  co_await expectEchoedStatus(
      stubs,
      "\t\ntest with whitespace\r\nand Unicode BMP \xe2\x98\xba and non-BMP \xf0\x9f\x98\x88\t\n",
      false);
}

void expectEchoedMetadata(const Metadata& initial, const Metadata& trailing,
                          const std::string& call) {
  const std::string* value = libnet::grpc::findMetadata(initial, kEchoInitial);
  expect(value != nullptr && *value == kInitialValue, call + ": no echoed initial metadata");
  value = libnet::grpc::findMetadata(trailing, kEchoTrailing);
  expect(value != nullptr && *value == kTrailingValue, call + ": no echoed trailing metadata");
}

Task<> customMetadata(Stubs& stubs) {
  const ClientCallOptions options{
      .metadata = {{kEchoInitial, kInitialValue}, {kEchoTrailing, kTrailingValue}}};
  {
    auto call = libnet::grpc::CoroClientStream<SimpleRequest, SimpleResponse>(
        stubs.test.channel(), "/grpc.testing.TestService/UnaryCall", options);
    co_await call.write(largeRequest());
    call.halfClose();
    auto response = co_await call.read();
    expectOk(co_await call.finish(), "UnaryCall");
    expect(response.has_value(), "UnaryCall: no response");
    expectEchoedMetadata(call.initialMetadata(), call.trailers(), "UnaryCall");
  }
  auto call = stubs.test.FullDuplexCall(options);
  expect(co_await call.write(pingRequest(kLargeRequest, kLargeResponse)), "FullDuplexCall: write");
  call.halfClose();
  auto response = co_await call.read();
  expect(response.has_value(), "FullDuplexCall: no response");
  expectBody(response->payload(), kLargeResponse, "FullDuplexCall");
  while (co_await call.read()) {
  }
  expectOk(co_await call.finish(), "FullDuplexCall");
  expectEchoedMetadata(call.initialMetadata(), call.trailers(), "FullDuplexCall");
}

Task<> unimplementedMethod(Stubs& stubs) {
  auto reply = co_await stubs.test.UnimplementedCall(Empty());
  expectCode(reply.status(), StatusCode::kUnimplemented, "TestService/UnimplementedCall");
}

Task<> unimplementedService(Stubs& stubs) {
  auto reply = co_await stubs.unimplemented.UnimplementedCall(Empty());
  expectCode(reply.status(), StatusCode::kUnimplemented, "UnimplementedService/UnimplementedCall");
}

using Case = std::function<Task<>(Stubs&)>;

const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> table = {
      {"empty_unary", emptyUnary},
      {"large_unary", largeUnary},
      {"client_streaming", clientStreaming},
      {"server_streaming", serverStreaming},
      {"ping_pong", pingPong},
      {"empty_stream", emptyStream},
      {"timeout_on_sleeping_server", timeoutOnSleepingServer},
      {"cancel_after_begin", cancelAfterBegin},
      {"cancel_after_first_response", cancelAfterFirstResponse},
      {"status_code_and_message", statusCodeAndMessage},
      {"special_status_message", specialStatusMessage},
      {"custom_metadata", customMetadata},
      {"unimplemented_method", unimplementedMethod},
      {"unimplemented_service", unimplementedService},
      {"client_compressed_unary", clientCompressedUnary},
      {"server_compressed_unary", serverCompressedUnary},
      {"client_compressed_streaming", clientCompressedStreaming},
      {"server_compressed_streaming", serverCompressedStreaming},
  };
  return table;
}

struct Settings {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  std::string testCase;
  bool tls = false;
  std::string caFile;
  std::string hostOverride;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
};

const char kUsage[] =
    "usage: interop_client --server_port PORT --test_case CASE [--server_host HOST]\n"
    "                      [--use_tls true|false] [--ca_file FILE]\n"
    "                      [--server_host_override NAME] [--use_test_ca true|false]\n"
    "                      [--backend epoll|uring|auto]\n";

libnet::Flags::Setter text(std::string* target) {
  return [target](std::string_view value) -> std::string {
    *target = std::string(value);
    return {};
  };
}

libnet::Flags::Setter boolean(bool* target) {
  return [target](std::string_view value) -> std::string {
    if (value != "true" && value != "false") return "expected true or false";
    *target = value == "true";
    return {};
  };
}

std::optional<int> parseFlags(int argc, char* argv[], Settings* settings) {
  libnet::Flags flags("interop_client", kUsage);
  bool testCa = true;
  flags.addCustom("--server_host", text(&settings->host));
  flags.addPort("--server_port", &settings->port);
  flags.addCustom("--test_case", text(&settings->testCase));
  flags.addCustom("--use_tls", boolean(&settings->tls));
  flags.addCustom("--use_test_ca", boolean(&testCa));
  flags.addFile("--ca_file", &settings->caFile);
  flags.addCustom("--server_host_override", text(&settings->hostOverride));
  flags.addBackend("--backend", &settings->backend);
  if (std::optional<int> exit = flags.parse(argc, argv)) return exit;
  if (settings->port == 0 || cases().count(settings->testCase) == 0) {
    std::fprintf(stderr, "interop_client: --server_port and a known --test_case are needed\n");
    return libnet::Flags::kExitUsage;
  }
  return std::nullopt;
}

Task<> runCase(Stubs stubs, Case testCase, int* exitCode, libnet::EventLoop* loop) {
  try {
    co_await testCase(stubs);
  } catch (const CaseFailure& failure) {
    std::fprintf(stderr, "interop_client: FAILED: %s\n", failure.what());
    *exitCode = 1;
  }
  loop->quit();
}

int run(const Settings& settings) {
  libnet::EventLoop loop(settings.backend);
  libnet::grpc::Channel::Options options;
  if (settings.tls) {
    options.tls = libnet::tls::Context::newClient({.caFile = settings.caFile, .alpn = {"h2"}});
    options.serverNameOverride = settings.hostOverride;
  }
  auto channel = libnet::grpc::Channel::create(
      &loop, libnet::InetAddress::joinHostPort(settings.host, settings.port), options);
  int exitCode = 0;
  libnet::coro::spawn(
      &loop, runCase(Stubs{TestService::Stub(channel), UnimplementedService::Stub(channel)},
                     cases().at(settings.testCase), &exitCode, &loop));
  loop.loop();
  if (exitCode == 0) std::printf("interop_client: %s passed\n", settings.testCase.c_str());
  return exitCode;
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  if (std::optional<int> exit = parseFlags(argc, argv, &settings)) return *exit;
  try {
    return run(settings);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "interop_client: %s\n", e.what());
    return 1;
  }
}
