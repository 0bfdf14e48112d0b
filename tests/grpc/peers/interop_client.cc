// grpc++'s side of the interop tests: a client of grpc.testing.TestService on
// grpc++ 1.51 that runs one case of grpc's interop test descriptions per
// invocation, with the flags of grpc's interop clients.
//
//   interop_client --server_host HOST --server_port PORT --test_case CASE
//                  [--use_tls true [--ca_file FILE] [--server_host_override NAME]]
//
// With TLS the server's certificate is verified against --ca_file (grpc's
// --use_test_ca is accepted and means the same). Exit 0: the case passed;
// 1: it failed (why on stderr); 2: bad flags or an unknown case.
#include <grpcpp/grpcpp.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "examples/grpc/protos/test.grpc.pb.h"
#include "tests/grpc/peers/MessageFlags.h"
#include "tests/grpc/peers/PeerFlags.h"

namespace {

using grpc::ClientContext;
using grpc::Status;
using grpc::StatusCode;
using namespace grpc::testing;

const char kEchoInitial[] = "x-grpc-test-echo-initial";
const char kEchoTrailing[] = "x-grpc-test-echo-trailing-bin";
const char kInitialValue[] = "test_initial_metadata_value";
const char kTrailingValue[] = "\xab\xab\xab";
constexpr int kLargeRequest = 271828;
constexpr int kLargeResponse = 314159;
const int kStreamRequests[] = {27182, 8, 1828, 45904};
const int kStreamResponses[] = {31415, 9, 2653, 58979};

// Thrown by a test case that fails: its message says what differed.
class CaseFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Stubs {
  std::unique_ptr<TestService::Stub> test;
  std::unique_ptr<UnimplementedService::Stub> unimplemented;
};

void expect(bool condition, const std::string& what) {
  if (!condition) throw CaseFailure(what);
}

void expectOk(const Status& status, const std::string& call) {
  if (!status.ok()) {
    throw CaseFailure(call + " failed: code " + std::to_string(status.error_code()) + " '" +
                      status.error_message() + "'");
  }
}

void expectCode(const Status& status, StatusCode code, const std::string& call) {
  expect(status.error_code() == code, call + ": code " + std::to_string(status.error_code()) +
                                          " '" + status.error_message() + "', expected " +
                                          std::to_string(code));
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

void emptyUnary(Stubs& stubs) {
  ClientContext context;
  Empty response;
  expectOk(stubs.test->EmptyCall(&context, Empty(), &response), "EmptyCall");
  expect(response.ByteSizeLong() == 0, "EmptyCall: the response is not empty");
}

void largeUnary(Stubs& stubs) {
  ClientContext context;
  SimpleResponse response;
  expectOk(stubs.test->UnaryCall(&context, largeRequest(), &response), "UnaryCall");
  expectBody(response.payload(), kLargeResponse, "UnaryCall");
}

void clientCompressedUnary(Stubs& stubs) {
  SimpleRequest request = largeRequest();
  request.mutable_expect_compressed()->set_value(true);
  {
    ClientContext probe;
    SimpleResponse response;
    expectCode(stubs.test->UnaryCall(&probe, request, &response), StatusCode::INVALID_ARGUMENT,
               "the probe (uncompressed, expect_compressed true)");
  }
  for (bool compressed : {true, false}) {
    ClientContext context;
    if (compressed) context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    request.mutable_expect_compressed()->set_value(compressed);
    SimpleResponse response;
    std::string what = compressed ? "compressed UnaryCall" : "uncompressed UnaryCall";
    expectOk(stubs.test->UnaryCall(&context, request, &response), what);
    expectBody(response.payload(), kLargeResponse, what);
  }
}

void serverCompressedUnary(Stubs& stubs) {
  for (bool compressed : {true, false}) {
    ClientContext context;
    SimpleRequest request = largeRequest();
    request.mutable_response_compressed()->set_value(compressed);
    SimpleResponse response;
    std::string what = compressed ? "UnaryCall (response_compressed true)"
                                  : "UnaryCall (response_compressed false)";
    expectOk(stubs.test->UnaryCall(&context, request, &response), what);
    expect(peers::lastMessageWasCompressed(context.c_call()) == compressed,
           what + ": the response's compressed flag is " + (compressed ? "not set" : "set"));
    expectBody(response.payload(), kLargeResponse, what);
  }
}

void clientStreaming(Stubs& stubs) {
  ClientContext context;
  StreamingInputCallResponse response;
  auto stream = stubs.test->StreamingInputCall(&context, &response);
  for (int size : kStreamRequests) {
    StreamingInputCallRequest request;
    request.mutable_payload()->set_body(zeros(size));
    expect(stream->Write(request), "StreamingInputCall: a write failed");
  }
  stream->WritesDone();
  expectOk(stream->Finish(), "StreamingInputCall");
  expect(response.aggregated_payload_size() == 74922,
         "aggregated_payload_size " + std::to_string(response.aggregated_payload_size()) +
             ", expected 74922");
}

void clientCompressedStreaming(Stubs& stubs) {
  StreamingInputCallRequest request;
  request.mutable_expect_compressed()->set_value(true);
  request.mutable_payload()->set_body(zeros(27182));
  {
    ClientContext probe;
    StreamingInputCallResponse response;
    auto stream = stubs.test->StreamingInputCall(&probe, &response);
    stream->Write(request);
    stream->WritesDone();
    expectCode(stream->Finish(), StatusCode::INVALID_ARGUMENT,
               "the probe (uncompressed, expect_compressed true)");
  }
  ClientContext context;
  context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  StreamingInputCallResponse response;
  auto stream = stubs.test->StreamingInputCall(&context, &response);
  expect(stream->Write(request), "StreamingInputCall: the compressed write failed");
  request.mutable_expect_compressed()->set_value(false);
  request.mutable_payload()->set_body(zeros(45904));
  expect(stream->Write(request, grpc::WriteOptions().set_no_compression()),
         "StreamingInputCall: the uncompressed write failed");
  stream->WritesDone();
  expectOk(stream->Finish(), "StreamingInputCall");
  expect(response.aggregated_payload_size() == 73086,
         "aggregated_payload_size " + std::to_string(response.aggregated_payload_size()) +
             ", expected 73086");
}

void serverStreaming(Stubs& stubs) {
  ClientContext context;
  StreamingOutputCallRequest request;
  for (int size : kStreamResponses) request.add_response_parameters()->set_size(size);
  auto stream = stubs.test->StreamingOutputCall(&context, request);
  StreamingOutputCallResponse response;
  size_t count = 0;
  while (stream->Read(&response)) {
    expect(count < std::size(kStreamResponses), "StreamingOutputCall: more than four responses");
    expectBody(response.payload(), kStreamResponses[count], "response " + std::to_string(count));
    ++count;
  }
  expectOk(stream->Finish(), "StreamingOutputCall");
  expect(count == std::size(kStreamResponses),
         "StreamingOutputCall: " + std::to_string(count) + " responses, expected 4");
}

void serverCompressedStreaming(Stubs& stubs) {
  ClientContext context;
  StreamingOutputCallRequest request;
  const int sizes[] = {31415, 92653};
  const bool compressed[] = {true, false};
  for (int i = 0; i < 2; ++i) {
    auto* parameters = request.add_response_parameters();
    parameters->set_size(sizes[i]);
    parameters->mutable_compressed()->set_value(compressed[i]);
  }
  auto stream = stubs.test->StreamingOutputCall(&context, request);
  StreamingOutputCallResponse response;
  int count = 0;
  while (stream->Read(&response)) {
    expect(count < 2, "StreamingOutputCall: more than two responses");
    expect(peers::lastMessageWasCompressed(context.c_call()) == compressed[count],
           "response " + std::to_string(count) + ": the compressed flag is " +
               (compressed[count] ? "not set" : "set"));
    expectBody(response.payload(), sizes[count], "response " + std::to_string(count));
    ++count;
  }
  expectOk(stream->Finish(), "StreamingOutputCall");
  expect(count == 2, "StreamingOutputCall: " + std::to_string(count) + " responses, expected 2");
}

void pingPong(Stubs& stubs) {
  ClientContext context;
  auto stream = stubs.test->FullDuplexCall(&context);
  for (size_t i = 0; i < std::size(kStreamRequests); ++i) {
    expect(stream->Write(pingRequest(kStreamRequests[i], kStreamResponses[i])),
           "FullDuplexCall: write " + std::to_string(i) + " failed");
    StreamingOutputCallResponse response;
    expect(stream->Read(&response), "FullDuplexCall: no response " + std::to_string(i));
    expectBody(response.payload(), kStreamResponses[i], "response " + std::to_string(i));
  }
  stream->WritesDone();
  StreamingOutputCallResponse extra;
  expect(!stream->Read(&extra), "FullDuplexCall: more than four responses");
  expectOk(stream->Finish(), "FullDuplexCall");
}

void emptyStream(Stubs& stubs) {
  ClientContext context;
  auto stream = stubs.test->FullDuplexCall(&context);
  stream->WritesDone();
  StreamingOutputCallResponse response;
  expect(!stream->Read(&response), "FullDuplexCall: a response to no request");
  expectOk(stream->Finish(), "FullDuplexCall");
}

void timeoutOnSleepingServer(Stubs& stubs) {
  ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
  auto stream = stubs.test->FullDuplexCall(&context);
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body(zeros(27182));
  stream->Write(request);
  StreamingOutputCallResponse response;
  while (stream->Read(&response)) {
  }
  expectCode(stream->Finish(), StatusCode::DEADLINE_EXCEEDED, "FullDuplexCall with 1 ms");
}

void cancelAfterBegin(Stubs& stubs) {
  ClientContext context;
  StreamingInputCallResponse response;
  auto stream = stubs.test->StreamingInputCall(&context, &response);
  context.TryCancel();
  expectCode(stream->Finish(), StatusCode::CANCELLED, "StreamingInputCall cancelled");
}

void cancelAfterFirstResponse(Stubs& stubs) {
  ClientContext context;
  auto stream = stubs.test->FullDuplexCall(&context);
  expect(stream->Write(pingRequest(27182, 31415)), "FullDuplexCall: the write failed");
  StreamingOutputCallResponse response;
  expect(stream->Read(&response), "FullDuplexCall: no first response");
  expectBody(response.payload(), 31415, "the first response");
  context.TryCancel();
  expectCode(stream->Finish(), StatusCode::CANCELLED, "FullDuplexCall cancelled");
}

void expectEchoedStatus(Stubs& stubs, const std::string& message) {
  SimpleRequest request;
  request.mutable_response_status()->set_code(2);
  request.mutable_response_status()->set_message(message);
  ClientContext unaryContext;
  SimpleResponse response;
  Status unary = stubs.test->UnaryCall(&unaryContext, request, &response);
  expectCode(unary, StatusCode::UNKNOWN, "UnaryCall");
  expect(unary.error_message() == message, "UnaryCall: message '" + unary.error_message() + "'");

  ClientContext streamContext;
  auto stream = stubs.test->FullDuplexCall(&streamContext);
  StreamingOutputCallRequest streamRequest;
  *streamRequest.mutable_response_status() = request.response_status();
  stream->Write(streamRequest);
  stream->WritesDone();
  StreamingOutputCallResponse ignored;
  while (stream->Read(&ignored)) {
  }
  Status duplex = stream->Finish();
  expectCode(duplex, StatusCode::UNKNOWN, "FullDuplexCall");
  expect(duplex.error_message() == message,
         "FullDuplexCall: message '" + duplex.error_message() + "'");
}

void statusCodeAndMessage(Stubs& stubs) { expectEchoedStatus(stubs, "test status message"); }

void specialStatusMessage(Stubs& stubs) {
  const std::string message =
      "\t\ntest with whitespace\r\nand Unicode BMP \xe2\x98\xba and non-BMP \xf0\x9f\x98\x88\t\n";
  SimpleRequest request;
  request.mutable_response_status()->set_code(2);
  request.mutable_response_status()->set_message(message);
  ClientContext context;
  SimpleResponse response;
  Status status = stubs.test->UnaryCall(&context, request, &response);
  expectCode(status, StatusCode::UNKNOWN, "UnaryCall");
  expect(status.error_message() == message,
         "UnaryCall: message '" + status.error_message() + "' differs");
}

void expectEchoedMetadata(const ClientContext& context, const std::string& call) {
  const auto& initial = context.GetServerInitialMetadata();
  auto it = initial.find(kEchoInitial);
  expect(it != initial.end() && std::string(it->second.data(), it->second.size()) == kInitialValue,
         call + ": no echoed initial metadata");
  const auto& trailing = context.GetServerTrailingMetadata();
  it = trailing.find(kEchoTrailing);
  expect(
      it != trailing.end() && std::string(it->second.data(), it->second.size()) == kTrailingValue,
      call + ": no echoed trailing metadata");
}

void customMetadata(Stubs& stubs) {
  ClientContext unaryContext;
  unaryContext.AddMetadata(kEchoInitial, kInitialValue);
  unaryContext.AddMetadata(kEchoTrailing, kTrailingValue);
  SimpleResponse response;
  expectOk(stubs.test->UnaryCall(&unaryContext, largeRequest(), &response), "UnaryCall");
  expectEchoedMetadata(unaryContext, "UnaryCall");

  ClientContext streamContext;
  streamContext.AddMetadata(kEchoInitial, kInitialValue);
  streamContext.AddMetadata(kEchoTrailing, kTrailingValue);
  auto stream = stubs.test->FullDuplexCall(&streamContext);
  expect(stream->Write(pingRequest(kLargeRequest, kLargeResponse)), "FullDuplexCall: write");
  stream->WritesDone();
  StreamingOutputCallResponse streamed;
  expect(stream->Read(&streamed), "FullDuplexCall: no response");
  expectBody(streamed.payload(), kLargeResponse, "FullDuplexCall");
  while (stream->Read(&streamed)) {
  }
  expectOk(stream->Finish(), "FullDuplexCall");
  expectEchoedMetadata(streamContext, "FullDuplexCall");
}

void unimplementedMethod(Stubs& stubs) {
  ClientContext context;
  Empty response;
  expectCode(stubs.test->UnimplementedCall(&context, Empty(), &response), StatusCode::UNIMPLEMENTED,
             "TestService/UnimplementedCall");
}

void unimplementedService(Stubs& stubs) {
  ClientContext context;
  Empty response;
  expectCode(stubs.unimplemented->UnimplementedCall(&context, Empty(), &response),
             StatusCode::UNIMPLEMENTED, "UnimplementedService/UnimplementedCall");
}

const std::map<std::string, std::function<void(Stubs&)>> kCases = {
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

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::shared_ptr<grpc::Channel> makeChannel(const peers::PeerFlags& flags) {
  std::string target = flags.get("server_host") + ":" + std::to_string(flags.getInt("server_port"));
  if (!flags.getBool("use_tls")) {
    return grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  }
  grpc::SslCredentialsOptions options;
  if (!flags.get("ca_file").empty()) options.pem_root_certs = readFile(flags.get("ca_file"));
  grpc::ChannelArguments arguments;
  if (!flags.get("server_host_override").empty()) {
    arguments.SetSslTargetNameOverride(flags.get("server_host_override"));
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(options), arguments);
}

}  // namespace

int main(int argc, char** argv) {
  std::shared_ptr<grpc::Channel> channel;
  std::function<void(Stubs&)> testCase;
  std::string name;
  try {
    peers::PeerFlags flags(argc, argv,
                           {{"server_host", "127.0.0.1"},
                            {"server_port", ""},
                            {"server_host_override", ""},
                            {"test_case", ""},
                            {"use_tls", "false"},
                            {"use_test_ca", "true"},
                            {"ca_file", ""}});
    name = flags.get("test_case");
    auto it = kCases.find(name);
    if (it == kCases.end()) throw std::invalid_argument("unknown --test_case '" + name + "'");
    testCase = it->second;
    channel = makeChannel(flags);
  } catch (const std::exception& e) {
    std::cerr << "interop_client: " << e.what() << "\n";
    return 2;
  }
  Stubs stubs{TestService::NewStub(channel), UnimplementedService::NewStub(channel)};
  try {
    testCase(stubs);
  } catch (const CaseFailure& failure) {
    std::cerr << "interop_client: " << name << " FAILED: " << failure.what() << "\n";
    return 1;
  }
  std::cout << "interop_client: " << name << " passed" << std::endl;
  return 0;
}
