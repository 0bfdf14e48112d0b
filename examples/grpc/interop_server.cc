// interop_server: grpc.testing.TestService (examples/grpc/protos/test.proto)
// on libnet, the server side of grpc's interop test descriptions: EmptyCall,
// UnaryCall (response_size, response_compressed, response_status,
// expect_compressed), StreamingOutputCall, StreamingInputCall,
// FullDuplexCall, HalfDuplexCall, ResponseParameters' size, compressed and
// interval_us, and the echo of x-grpc-test-echo-initial (initial metadata)
// and x-grpc-test-echo-trailing-bin (trailing metadata). UnimplementedCall is
// left to the generated default and UnimplementedService is not served: both
// answer UNIMPLEMENTED.
//
//   interop_server [--address IP] [--port N] [--backend epoll|uring|auto]
//                  [--threads N] [--tls-cert FILE --tls-key FILE] [--h2c]
//                  [--use_tls true|false --tls_cert FILE --tls_key FILE]
//
// The second line of flags is grpc's interop server's spelling (what the
// interop matrix, tests/grpc/interop, gives every server). Plain TCP serves
// HTTP/2 with prior knowledge (h2c); TLS chooses h2 by ALPN. Prints
// "interop_server listening on IP:PORT" once it serves; SIGINT or SIGTERM
// drain it (calls in flight finish, at most 2 s), exit 0. Bad flags: exit 2.
//
// Callback handlers (TestService::Service): the client's per-message
// compressed flag, which client_compressed_* check, is the call's state while
// its message callback runs (ServerCall::lastMessageCompressed()), so each
// request is checked as it arrives. The coroutine form of a service is shown
// by route_server.cc.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "examples/common/Flags.h"
#include "examples/grpc/protos/test.libnet.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/grpc/Server.h"
#include "net/http/HttpServer.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"

namespace {

namespace testing = ::grpc::testing;
using libnet::grpc::ServerCall;
using libnet::grpc::ServerStreamPtr;
using libnet::grpc::Status;
using libnet::grpc::StatusCode;
using OutputStream =
    ServerStreamPtr<testing::StreamingOutputCallRequest, testing::StreamingOutputCallResponse>;

const char kEchoInitial[] = "x-grpc-test-echo-initial";
const char kEchoTrailing[] = "x-grpc-test-echo-trailing-bin";

// Echo Metadata: the two keys the client sent come back, one in the initial
// and one in the trailing metadata.
void echoMetadata(ServerCall& call) {
  if (const std::string* value = libnet::grpc::findMetadata(call.clientMetadata(), kEchoInitial)) {
    call.addInitialMetadata(kEchoInitial, *value);
  }
  if (const std::string* value = libnet::grpc::findMetadata(call.clientMetadata(), kEchoTrailing)) {
    call.addTrailingMetadata(kEchoTrailing, *value);
  }
}

// CompressedRequest: a request that should have come compressed (or not) but
// did not fails the call INVALID_ARGUMENT. Inside the message callback (or a
// unary handler, which runs after its one message).
std::optional<Status> checkCompression(const ServerCall& call, const testing::BoolValue& expect) {
  if (expect.value() && !call.lastMessageCompressed()) {
    return Status(StatusCode::kInvalidArgument, "expected a compressed request message");
  }
  if (!expect.value() && call.lastMessageCompressed()) {
    return Status(StatusCode::kInvalidArgument, "expected an uncompressed request message");
  }
  return std::nullopt;
}

bool fillPayload(int size, testing::Payload* payload) {
  if (size < 0) return false;
  payload->set_type(testing::COMPRESSABLE);
  payload->set_body(std::string(static_cast<size_t>(size), '\0'));
  return true;
}

Status echoStatus(const testing::EchoStatus& status) {
  const int code = status.code();
  if (code < 0 || code > static_cast<int>(StatusCode::kUnauthenticated)) {
    return Status(StatusCode::kUnknown, status.message());
  }
  return Status(static_cast<StatusCode>(code), status.message());
}

// The responses of StreamingOutputCall, FullDuplexCall and HalfDuplexCall,
// written one at a time on the call's loop: each after its interval_us (a
// timer), each compressed or not as its parameters ask, and the next one only
// once the client has taken enough (the writable callback), so that a client
// that does not read holds the server to the writer's highWater.
class Responder : public std::enable_shared_from_this<Responder> {
 public:
  explicit Responder(OutputStream stream) : stream_(std::move(stream)) {}

  // Queues the responses `request` asks for; `then` runs once they are
  // written (not when the call ends first). Loop thread; one batch at a time.
  void send(const testing::StreamingOutputCallRequest& request, std::function<void()> then) {
    pending_.assign(request.response_parameters().begin(), request.response_parameters().end());
    then_ = std::move(then);
    next();
  }

 private:
  void next() {
    while (!pending_.empty()) {
      if (stream_->cancelled()) return;
      const testing::ResponseParameters parameters = pending_.front();
      if (parameters.interval_us() > 0 && !slept_) {
        slept_ = true;
        stream_->call().loop()->runAfter(std::chrono::microseconds(parameters.interval_us()),
                                         [self = shared_from_this()] { self->next(); });
        return;
      }
      slept_ = false;
      pending_.pop_front();
      testing::StreamingOutputCallResponse response;
      if (!fillPayload(parameters.size(), response.mutable_payload())) {
        stream_->finish(Status(StatusCode::kInvalidArgument, "negative response size"));
        return;
      }
      stream_->call().setCompression(parameters.compressed().value());
      if (!stream_->write(response)) {
        stream_->onWritable([self = shared_from_this()] { self->next(); });
        return;
      }
    }
    // `then` may start the next batch (it resumes reading): taken out first.
    std::function<void()> then = std::move(then_);
    then_ = nullptr;
    if (then) then();
  }

  OutputStream stream_;
  std::deque<testing::ResponseParameters> pending_;
  std::function<void()> then_;
  bool slept_ = false;  // the front's interval has passed
};

class TestServiceImpl : public testing::TestService::Service {
 public:
  void EmptyCall(ServerStreamPtr<testing::Empty, testing::Empty> call) override {
    echoMetadata(call->call());
    call->finish(testing::Empty());
  }

  void UnaryCall(ServerStreamPtr<testing::SimpleRequest, testing::SimpleResponse> call) override {
    const testing::SimpleRequest& request = call->request();
    echoMetadata(call->call());
    if (request.has_expect_compressed()) {
      if (std::optional<Status> bad = checkCompression(call->call(), request.expect_compressed())) {
        call->finish(std::move(*bad));
        return;
      }
    }
    if (request.has_response_status() && request.response_status().code() != 0) {
      call->finish(echoStatus(request.response_status()));
      return;
    }
    testing::SimpleResponse response;
    if (!fillPayload(request.response_size(), response.mutable_payload())) {
      call->finish(Status(StatusCode::kInvalidArgument, "negative response size"));
      return;
    }
    call->call().setCompression(request.response_compressed().value());
    call->finish(response);
  }

  void StreamingOutputCall(OutputStream call) override {
    echoMetadata(call->call());
    auto responder = std::make_shared<Responder>(call);
    responder->send(call->request(), [call] {
      const testing::StreamingOutputCallRequest& request = call->request();
      call->finish(request.has_response_status() ? echoStatus(request.response_status())
                                                 : Status());
    });
  }

  void StreamingInputCall(
      ServerStreamPtr<testing::StreamingInputCallRequest, testing::StreamingInputCallResponse> call)
      override {
    echoMetadata(call->call());
    auto total = std::make_shared<int>(0);
    call->onMessage([call, total](testing::StreamingInputCallRequest request) {
      if (request.has_expect_compressed()) {
        if (std::optional<Status> bad =
                checkCompression(call->call(), request.expect_compressed())) {
          call->finish(std::move(*bad));
          return;
        }
      }
      *total += static_cast<int>(request.payload().body().size());
    });
    call->onHalfClose([call, total] {
      testing::StreamingInputCallResponse response;
      response.set_aggregated_payload_size(*total);
      call->finish(response);
    });
  }

  // Each request's responses are written before the next request is read
  // (reading pauses meanwhile): ping-pong. A request with a response_status
  // ends the call with it.
  void FullDuplexCall(OutputStream call) override {
    echoMetadata(call->call());
    auto responder = std::make_shared<Responder>(call);
    call->onMessage([call, responder](testing::StreamingOutputCallRequest request) {
      if (request.has_response_status()) {
        call->finish(echoStatus(request.response_status()));
        return;
      }
      call->pause();
      responder->send(request, [call] { call->resume(); });
    });
    // The half-close comes only once reading is resumed: every response is out.
    call->onHalfClose([call] { call->finish(Status()); });
  }

  // Every request first, then all their responses.
  void HalfDuplexCall(OutputStream call) override {
    echoMetadata(call->call());
    auto all = std::make_shared<testing::StreamingOutputCallRequest>();
    call->onMessage([all](testing::StreamingOutputCallRequest request) {
      all->mutable_response_parameters()->MergeFrom(request.response_parameters());
    });
    call->onHalfClose([call, all] {
      auto responder = std::make_shared<Responder>(call);
      responder->send(*all, [call] { call->finish(Status()); });
    });
  }
};

struct Settings {
  std::string address = "127.0.0.1";
  uint16_t port = 10000;
  int threads = 0;
  bool h2c = false;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  std::string certFile;
  std::string keyFile;
  std::optional<bool> useTls;  // grpc's --use_tls, when given
};

const char kUsage[] =
    "usage: interop_server [--address IP] [--port N] [--backend epoll|uring|auto]\n"
    "                      [--threads N] [--tls-cert FILE --tls-key FILE] [--h2c]\n"
    "                      [--use_tls true|false --tls_cert FILE --tls_key FILE]\n"
    "  --address IP     listen on this numeric address (default 127.0.0.1)\n"
    "  --port N         TCP port (default 10000; 0 picks one)\n"
    "  --backend B      poller: epoll, uring or auto (default)\n"
    "  --threads N      I/O loops besides the accepting one (default 0: one loop)\n"
    "  --tls-cert FILE  serve h2 over TLS with this PEM certificate chain\n"
    "  --tls-key FILE   ... and this PEM private key (both or neither)\n"
    "  --h2c            HTTP/2 with prior knowledge on plain TCP (the default\n"
    "                   without TLS)\n"
    "  --use_tls B      grpc's spelling: true needs --tls_cert and --tls_key\n"
    "                   (the same as --tls-cert and --tls-key)\n";

void addFlags(libnet::Flags* flags, Settings* settings) {
  flags->addAddress("--address", &settings->address);
  flags->addPort("--port", &settings->port);
  flags->addBackend("--backend", &settings->backend);
  flags->addInt("--threads", &settings->threads, 0, 64);
  flags->addSwitch("--h2c", &settings->h2c);
  for (const char* name : {"--tls-cert", "--tls_cert"}) flags->addFile(name, &settings->certFile);
  for (const char* name : {"--tls-key", "--tls_key"}) flags->addFile(name, &settings->keyFile);
  flags->addCustom("--use_tls", [settings](std::string_view value) -> std::string {
    if (value != "true" && value != "false") return "must be true or false";
    settings->useTls = value == "true";
    return "";
  });
}

// "" if the flags make sense together, else why not.
std::string checkFlags(const Settings& settings) {
  const bool certs = !settings.certFile.empty() || !settings.keyFile.empty();
  if (settings.certFile.empty() != settings.keyFile.empty()) {
    return "--tls-cert and --tls-key go together";
  }
  if (settings.useTls == true && !certs) return "--use_tls true needs --tls_cert and --tls_key";
  if (settings.useTls == false && certs) return "--use_tls false with a certificate";
  if (settings.h2c && certs) return "--h2c is for plain TCP, not with a certificate";
  return "";
}

std::shared_ptr<const libnet::ConnectionLayer> tlsLayer(const Settings& settings) {
  if (settings.certFile.empty()) return nullptr;
  libnet::tls::Context::ServerOptions options;
  options.certChainFile = settings.certFile;
  options.keyFile = settings.keyFile;
  options.alpn = {"h2"};
  return libnet::tls::newLayer(libnet::tls::Context::newServer(options));
}

int serve(const Settings& settings) {
  libnet::EventLoop loop(settings.backend);
  libnet::http::HttpServer::Options options;
  options.threads = settings.threads;
  options.layer = tlsLayer(settings);
  libnet::http::HttpServer http(&loop, *libnet::InetAddress::parse(settings.address, settings.port),
                                "interop", options);
  libnet::grpc::Server server(http, {});
  TestServiceImpl service;
  server.addService(&service);
  libnet::SignalSet signals(&loop, {SIGINT, SIGTERM}, [&](int) {
    http.drain(std::chrono::seconds(2), [&loop] { loop.quit(); });
  });
  http.start();
  std::printf("interop_server listening on %s\n", http.listenAddress().toIpPort().c_str());
  std::fflush(stdout);
  loop.loop();
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  libnet::Flags flags("interop_server", kUsage);
  addFlags(&flags, &settings);
  if (std::optional<int> exit = flags.parse(argc, argv)) return *exit;
  if (std::string problem = checkFlags(settings); !problem.empty()) {
    std::fprintf(stderr, "interop_server: %s\n%s", problem.c_str(), kUsage);
    return libnet::Flags::kExitUsage;
  }
  try {
    return serve(settings);
  } catch (const libnet::tls::Error& e) {
    std::fprintf(stderr, "interop_server: TLS: %s\n", e.what());
    return 1;
  }
}
