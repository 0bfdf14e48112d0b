// grpc++'s side of the interop tests: grpc.testing.TestService served by
// grpc++ 1.51 (its synchronous API), with the server features of grpc's
// interop test descriptions the listed cases need: EmptyCall, UnaryCall,
// StreamingInputCall, StreamingOutputCall, FullDuplexCall, HalfDuplexCall,
// CompressedRequest, CompressedResponse, Echo Status, Echo Metadata and
// ResponseParameters.interval_us.
//
//   interop_server --port PORT [--use_tls true --tls_cert FILE --tls_key FILE]
//
// PORT 0 picks an ephemeral port. Prints "listening on 127.0.0.1:PORT" once it
// serves; SIGTERM or SIGINT stop it (exit 0). Bad flags: exit 2.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "examples/grpc/protos/test.grpc.pb.h"
#include "tests/grpc/peers/MessageFlags.h"
#include "tests/grpc/peers/PeerFlags.h"

namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
using namespace grpc::testing;

const char kEchoInitial[] = "x-grpc-test-echo-initial";
const char kEchoTrailing[] = "x-grpc-test-echo-trailing-bin";

// Echo Metadata: the two keys the client sent come back, one in the initial
// and one in the trailing metadata.
void echoMetadata(ServerContext* context) {
  const auto& received = context->client_metadata();
  if (auto it = received.find(kEchoInitial); it != received.end()) {
    context->AddInitialMetadata(kEchoInitial, std::string(it->second.data(), it->second.size()));
  }
  if (auto it = received.find(kEchoTrailing); it != received.end()) {
    context->AddTrailingMetadata(kEchoTrailing, std::string(it->second.data(), it->second.size()));
  }
}

// CompressedRequest: a message that should have come compressed (or not) but
// did not fails the call with INVALID_ARGUMENT.
Status checkCompression(ServerContext* context, const BoolValue& expect) {
  bool compressed = peers::lastMessageWasCompressed(context->c_call());
  if (expect.value() && !compressed) {
    return Status(StatusCode::INVALID_ARGUMENT, "expected a compressed request message");
  }
  if (!expect.value() && compressed) {
    return Status(StatusCode::INVALID_ARGUMENT, "expected an uncompressed request message");
  }
  return Status::OK;
}

Status fillPayload(int size, Payload* payload) {
  if (size < 0) return Status(StatusCode::INVALID_ARGUMENT, "negative payload size");
  payload->set_type(COMPRESSABLE);
  payload->set_body(std::string(static_cast<size_t>(size), '\0'));
  return Status::OK;
}

Status echoStatus(const EchoStatus& status) {
  return Status(static_cast<StatusCode>(status.code()), status.message());
}

// CompressedResponse for a stream: gzip for the call when any response asks
// for compression, and a per-message opt-out for those that do not.
void chooseStreamCompression(ServerContext* context, const StreamingOutputCallRequest& request) {
  for (const auto& parameters : request.response_parameters()) {
    if (parameters.compressed().value()) {
      context->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      return;
    }
  }
}

template <typename Stream>
Status writeResponses(Stream* stream, const StreamingOutputCallRequest& request) {
  for (const auto& parameters : request.response_parameters()) {
    if (parameters.interval_us() > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(parameters.interval_us()));
    }
    StreamingOutputCallResponse response;
    if (Status s = fillPayload(parameters.size(), response.mutable_payload()); !s.ok()) return s;
    grpc::WriteOptions options;
    if (!parameters.compressed().value()) options.set_no_compression();
    if (!stream->Write(response, options)) {
      return Status(StatusCode::ABORTED, "the client went away");
    }
  }
  return Status::OK;
}

class TestServiceImpl final : public TestService::Service {
 public:
  Status EmptyCall(ServerContext* context, const Empty*, Empty*) override {
    echoMetadata(context);
    return Status::OK;
  }

  Status UnaryCall(ServerContext* context, const SimpleRequest* request,
                   SimpleResponse* response) override {
    echoMetadata(context);
    if (request->has_expect_compressed()) {
      if (Status s = checkCompression(context, request->expect_compressed()); !s.ok()) return s;
    }
    if (request->has_response_compressed()) {
      context->set_compression_algorithm(
          request->response_compressed().value() ? GRPC_COMPRESS_GZIP : GRPC_COMPRESS_NONE);
    }
    if (Status s = fillPayload(request->response_size(), response->mutable_payload()); !s.ok()) {
      return s;
    }
    if (request->has_response_status()) return echoStatus(request->response_status());
    return Status::OK;
  }

  Status StreamingOutputCall(ServerContext* context, const StreamingOutputCallRequest* request,
                             grpc::ServerWriter<StreamingOutputCallResponse>* writer) override {
    echoMetadata(context);
    chooseStreamCompression(context, *request);
    if (Status s = writeResponses(writer, *request); !s.ok()) return s;
    if (request->has_response_status()) return echoStatus(request->response_status());
    return Status::OK;
  }

  Status StreamingInputCall(ServerContext* context,
                            grpc::ServerReader<StreamingInputCallRequest>* reader,
                            StreamingInputCallResponse* response) override {
    echoMetadata(context);
    StreamingInputCallRequest request;
    int aggregated = 0;
    while (reader->Read(&request)) {
      if (request.has_expect_compressed()) {
        if (Status s = checkCompression(context, request.expect_compressed()); !s.ok()) return s;
      }
      aggregated += static_cast<int>(request.payload().body().size());
    }
    if (context->IsCancelled()) return Status(StatusCode::CANCELLED, "cancelled by the client");
    response->set_aggregated_payload_size(aggregated);
    return Status::OK;
  }

  Status FullDuplexCall(ServerContext* context,
                        grpc::ServerReaderWriter<StreamingOutputCallResponse,
                                                 StreamingOutputCallRequest>* stream) override {
    echoMetadata(context);
    StreamingOutputCallRequest request;
    bool first = true;
    while (stream->Read(&request)) {
      if (request.has_response_status()) return echoStatus(request.response_status());
      if (first) chooseStreamCompression(context, request);
      first = false;
      if (Status s = writeResponses(stream, request); !s.ok()) return s;
    }
    return Status::OK;
  }

  Status HalfDuplexCall(ServerContext* context,
                        grpc::ServerReaderWriter<StreamingOutputCallResponse,
                                                 StreamingOutputCallRequest>* stream) override {
    echoMetadata(context);
    std::vector<StreamingOutputCallRequest> requests;
    StreamingOutputCallRequest request;
    while (stream->Read(&request)) requests.push_back(request);
    for (const auto& buffered : requests) {
      if (Status s = writeResponses(stream, buffered); !s.ok()) return s;
    }
    return Status::OK;
  }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::shared_ptr<grpc::ServerCredentials> credentials(const peers::PeerFlags& flags) {
  if (!flags.getBool("use_tls")) return grpc::InsecureServerCredentials();
  if (flags.get("tls_cert").empty() || flags.get("tls_key").empty()) {
    throw std::invalid_argument("--use_tls true needs --tls_cert and --tls_key");
  }
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back(
      {readFile(flags.get("tls_key")), readFile(flags.get("tls_cert"))});
  return grpc::SslServerCredentials(options);
}

}  // namespace

int main(int argc, char** argv) {
  // Blocked before grpc starts a thread (every thread inherits the mask) and
  // taken by the waiting thread below: a signal handler may not call
  // Shutdown().
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  std::shared_ptr<grpc::ServerCredentials> creds;
  std::string address;
  try {
    peers::PeerFlags flags(argc, argv,
                           {{"port", "0"},
                            {"use_tls", "false"},
                            {"tls_cert", ""},
                            {"tls_key", ""},
                            {"host", "127.0.0.1"}});
    creds = credentials(flags);
    address = flags.get("host") + ":" + std::to_string(flags.getInt("port"));
  } catch (const std::exception& e) {
    std::cerr << "interop_server: " << e.what() << "\n";
    return 2;
  }
  TestServiceImpl service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, creds, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "interop_server: cannot listen on " << address << "\n";
    return 1;
  }
  std::cout << "listening on 127.0.0.1:" << port << std::endl;
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  });
  server->Wait();
  stopper.join();
  return 0;
}
