// grpc_test_server: a grpc::Server with raw methods (bytes in, bytes out) of
// the service test.Test, for the script tests of tests/grpc/server:
//   Echo          unary: the request back; the client's "x-*" metadata back
//                 as initial ("x-*") and trailing ("x-*-t") metadata; a
//                 client "x-status"/"x-message" ends it with that status
//   Sleep         never answers: counts its cancel callback's runs
//   Throw         the handler throws (an int for the request "int")
//   Drop          the handler drops the call unanswered
//   ServerStream  "N SIZE": N messages of SIZE bytes, under back-pressure
//   ClientStream  answers "count=N bytes=B" at the client's end
//   Bidi          each message back as it comes, OK at the client's end
//   Big           unary "SIZE": one message of SIZE bytes
//   Gzip          unary: the request back, compressed (setCompression)
//   Hold          never reads, never answers (until cancelled)
//   Stats         "cancels=C handled=H"
// and GET /hello (the HttpServer's own handler) for "one port serves all".
// --max-receive N / --max-send N set the message bounds, --threads N the
// I/O loops.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/grpc/Server.h"
#include "net/grpc/Service.h"
#include "net/http/HttpServer.h"

using libnet::grpc::MethodKind;
using libnet::grpc::ServerCallPtr;
using libnet::grpc::Status;
using libnet::grpc::StatusCode;

namespace {

std::atomic<int> cancels{0};
std::atomic<int> handled{0};

// test.Test's descriptor, built at run time: the methods' types do not
// matter to raw methods.
const google::protobuf::ServiceDescriptor* testDescriptor() {
  static google::protobuf::DescriptorPool pool;
  static const google::protobuf::ServiceDescriptor* descriptor = [] {
    google::protobuf::FileDescriptorProto file;
    file.set_name("grpc_test_server.proto");
    file.set_package("test");
    file.add_message_type()->set_name("Bytes");
    google::protobuf::ServiceDescriptorProto* service = file.add_service();
    service->set_name("Test");
    for (const char* name : {"Echo", "Sleep", "Throw", "Drop", "ServerStream", "ClientStream",
                             "Bidi", "Big", "Gzip", "Hold", "Stats"}) {
      google::protobuf::MethodDescriptorProto* method = service->add_method();
      method->set_name(name);
      method->set_input_type(".test.Bytes");
      method->set_output_type(".test.Bytes");
    }
    return pool.BuildFile(file)->service(0);
  }();
  return descriptor;
}

// N messages of SIZE bytes, each written when the writer takes more.
struct Producer : std::enable_shared_from_this<Producer> {
  ServerCallPtr call;
  int left = 0;
  size_t size = 0;
  void pump() {
    while (left > 0) {
      --left;
      std::string message(size, static_cast<char>('a' + left % 26));
      if (!call->write(std::move(message))) {
        if (call->cancelled()) return;
        if (left > 0) {
          call->setWritableCallback([self = shared_from_this()] { self->pump(); });
          return;
        }
      }
    }
    call->finish(Status());
  }
};

class TestService : public libnet::grpc::Service {
 public:
  TestService() : Service(testDescriptor()) {
    unary("Echo", [](const ServerCallPtr& call, std::string request) { echo(call, request); });
    addRawMethod("Sleep", MethodKind::kUnary, [](ServerCallPtr call) {
      ++handled;
      call->setCancelCallback([call] { ++cancels; });
    });
    unary("Throw", [](const ServerCallPtr&, const std::string& request) {
      if (request == "int") throw 42;
      throw std::runtime_error("the handler threw");
    });
    addRawMethod("Drop", MethodKind::kUnary, [](const ServerCallPtr&) { ++handled; });
    unary("ServerStream", [](const ServerCallPtr& call, const std::string& request) {
      auto producer = std::make_shared<Producer>();
      producer->call = call;
      std::sscanf(request.c_str(), "%d %zu", &producer->left, &producer->size);
      producer->pump();
    });
    addRawMethod("ClientStream", MethodKind::kClientStreaming, [](ServerCallPtr call) {
      ++handled;
      auto totals = std::make_shared<std::pair<size_t, size_t>>();
      call->setMessageCallback([totals](std::string message) {
        ++totals->first;
        totals->second += message.size();
      });
      call->setHalfCloseCallback([call, totals] {
        call->write("count=" + std::to_string(totals->first) +
                    " bytes=" + std::to_string(totals->second));
        call->finish(Status());
      });
    });
    addRawMethod("Bidi", MethodKind::kBidiStreaming, [](ServerCallPtr call) {
      ++handled;
      call->setMessageCallback([call](std::string message) { call->write(std::move(message)); });
      call->setHalfCloseCallback([call] { call->finish(Status()); });
    });
    unary("Big", [](const ServerCallPtr& call, const std::string& request) {
      call->write(std::string(std::stoul(request), 'b'));
      call->finish(Status());
    });
    unary("Gzip", [](const ServerCallPtr& call, std::string request) {
      call->setCompression(true);
      call->write(std::move(request));
      call->finish(Status());
    });
    addRawMethod("Hold", MethodKind::kBidiStreaming, [](ServerCallPtr call) {
      ++handled;
      call->setCancelCallback([call] { ++cancels; });
    });
    unary("Stats", [](const ServerCallPtr& call, const std::string&) {
      call->write("cancels=" + std::to_string(cancels.load()) +
                  " handled=" + std::to_string(handled.load()));
      call->finish(Status());
    });
  }

 private:
  template <class Fn>
  void unary(const char* name, Fn fn) {
    addRawMethod(name, MethodKind::kUnary, [fn](ServerCallPtr call) {
      ++handled;
      awaitOneRequest(call, [call, fn](std::string request) { fn(call, std::move(request)); });
    });
  }

  static void echo(const ServerCallPtr& call, std::string request) {
    const libnet::grpc::Metadata& metadata = call->clientMetadata();
    for (const auto& [key, value] : metadata) {
      if (!key.starts_with("x-") || key.starts_with("x-status") || key.starts_with("x-message")) continue;
      call->addInitialMetadata(key, value);
      const bool binary = key.ends_with("-bin");
      call->addTrailingMetadata(binary ? key.substr(0, key.size() - 4) + "-t-bin" : key + "-t",
                                value);
    }
    const std::string* code = libnet::grpc::findMetadata(metadata, "x-status");
    if (code != nullptr) {
      const std::string* message = libnet::grpc::findMetadata(metadata, "x-message");
      if (message == nullptr) message = libnet::grpc::findMetadata(metadata, "x-message-bin");
      call->finish(Status(static_cast<StatusCode>(std::stoi(*code)), message ? *message : ""));
      return;
    }
    call->write(std::move(request));
    call->finish(Status());
  }
};

}  // namespace

int main(int argc, char* argv[]) {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  int threads = 0;
  int maxReceive = 4 * 1024 * 1024;
  int maxSend = 4 * 1024 * 1024;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  libnet::Flags flags("grpc_test_server",
                      "usage: grpc_test_server [--address IP] [--port N] "
                      "[--backend epoll|uring|auto] [--threads N] [--max-receive N] "
                      "[--max-send N]\n");
  flags.addAddress("--address", &address);
  flags.addPort("--port", &port);
  flags.addBackend("--backend", &backend);
  flags.addInt("--threads", &threads, 0, 64);
  flags.addInt("--max-receive", &maxReceive, 1, 1 << 30);
  flags.addInt("--max-send", &maxSend, 1, 1 << 30);
  if (const std::optional<int> exit = flags.parse(argc, argv)) return *exit;

  libnet::EventLoop loop(backend);
  libnet::http::HttpServer::Options options;
  options.threads = threads;
  libnet::http::HttpServer http(&loop, *libnet::InetAddress::parse(address, port), "grpc_test",
                                options);
  http.setHandler([](const libnet::http::HttpRequest& request, libnet::http::HttpResponse* response) {
    if (request.path() == "/hello") {
      response->setContentType("text/plain");
      response->setBody("hello\n");
    } else {
      response->setStatusPage(404);
    }
  });
  libnet::grpc::Server server(http, {.maxReceiveMessageBytes = static_cast<size_t>(maxReceive),
                                     .maxSendMessageBytes = static_cast<size_t>(maxSend)});
  TestService service;
  server.addService(&service);
  libnet::SignalSet signals(&loop, {SIGINT, SIGTERM}, [&](int) {
    http.drain(std::chrono::seconds(5), [&loop] { loop.quit(); });
  });
  http.start();
  std::printf("grpc_test_server listening on %s\n", http.listenAddress().toIpPort().c_str());
  std::fflush(stdout);
  loop.loop();
}
