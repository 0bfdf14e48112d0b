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
//   Later         unary: "MS": the request back MS milliseconds later (a
//                 loop timer), for a drain with calls in flight
//   Worker        unary: answered (the request back) from a worker thread
//   WorkerBidi    each message back from a worker thread, finished there
//                 at the client's end
// and coroutine methods (addCoroMethod) of google.protobuf.StringValue:
//   CoroEcho      unary: the request back
//   CoroStream    server streaming: "N" -> N messages "0".."N-1"
//   CoroBidi      each message back as read, OK at the client's end
//   CoroSum       client streaming: the messages joined with "+"
//   CoroSleep     sleeps until cancelled: counts the cancellation
//   CoroThrow     throws
//   CoroTimeout   co_awaits a sleep under coro::withTimeout(50ms): ABORTED
// and GET /hello (the HttpServer's own handler) for "one port serves all".
// --max-receive N / --max-send N set the message bounds, --threads N the
// I/O loops, --max-deadline-ms N caps grpc-timeout, --tls-cert/--tls-key serve h2 over TLS (ALPN)
// instead of h2c. SIGTERM drains (calls in flight finish) and exits 0.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/wrappers.pb.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "examples/common/Flags.h"
#include "examples/common/ServerTls.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/coro/Cancel.h"
#include "net/coro/Sleep.h"
#include "net/coro/Task.h"
#include "net/grpc/CoroStream.h"
#include "net/grpc/Server.h"
#include "net/grpc/Service.h"
#include "net/http/HttpServer.h"

using google::protobuf::StringValue;
using libnet::coro::Task;
using libnet::grpc::CoroStream;
using libnet::grpc::MethodKind;
using libnet::grpc::ServerCallPtr;
using libnet::grpc::Status;
using libnet::grpc::StatusCode;

namespace {

std::atomic<int> cancels{0};
std::atomic<int> handled{0};

// Threads that answer calls away from their loop, racing the clients'
// cancellations.
class Workers {
 public:
  explicit Workers(int count) {
    for (int i = 0; i < count; ++i) threads_.emplace_back([this] { run(); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
  void post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

Workers& workers() {
  static Workers pool(4);
  return pool;
}

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
    for (const char* name : {"Echo",         "Sleep",   "Throw",      "Drop",      "ServerStream",
                             "ClientStream", "Bidi",    "Big",        "Gzip",      "Hold",
                             "Stats",        "Worker",  "WorkerBidi", "CoroEcho",  "CoroStream",
                             "CoroBidi",     "CoroSum", "CoroSleep",  "CoroThrow", "CoroTimeout"}) {
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
    unary("Worker", [](const ServerCallPtr& call, std::string request) {
      workers().post([call, request = std::move(request)]() mutable {
        call->addInitialMetadata("x-worker", "1");
        call->write(std::move(request));
        call->addTrailingMetadata("x-done", "1");
        call->finish(Status());
      });
    });
    addRawMethod("WorkerBidi", MethodKind::kBidiStreaming, [](ServerCallPtr call) {
      ++handled;
      call->setMessageCallback([call](std::string message) {
        workers().post(
            [call, message = std::move(message)]() mutable { call->write(std::move(message)); });
      });
      call->setHalfCloseCallback([call] { workers().post([call] { call->finish(Status()); }); });
      call->setCancelCallback([call] { ++cancels; });
    });
    addCoroMethods();
    unary("Later", [](const ServerCallPtr& call, std::string request) {
      const auto delay = std::chrono::milliseconds(std::stoi(request));
      call->loop()->runAfter(delay, [call, request = std::move(request)]() mutable {
        call->write(std::move(request));
        call->finish(Status());
      });
    });
    unary("Stats", [](const ServerCallPtr& call, const std::string&) {
      call->write("cancels=" + std::to_string(cancels.load()) +
                  " handled=" + std::to_string(handled.load()));
      call->finish(Status());
    });
  }

 private:
  using Stream = CoroStream<StringValue, StringValue>;
  template <class Fn>
  void coro(const char* name, MethodKind kind, Fn fn) {
    addCoroMethod<StringValue, StringValue>(name, kind, [fn](Stream& stream) -> Task<Status> {
      ++handled;
      return fn(stream);
    });
  }

  static StringValue text(std::string value) {
    StringValue message;
    message.set_value(std::move(value));
    return message;
  }

  void addCoroMethods() {
    coro("CoroEcho", MethodKind::kUnary, [](Stream& stream) -> Task<Status> {
      co_await stream.write(stream.request());
      co_return Status();
    });
    coro("CoroStream", MethodKind::kServerStreaming, [](Stream& stream) -> Task<Status> {
      const int count = std::stoi(stream.request().value());
      for (int i = 0; i < count; ++i) {
        if (!co_await stream.write(text(std::to_string(i)))) co_return Status();
      }
      co_return Status();
    });
    coro("CoroBidi", MethodKind::kBidiStreaming, [](Stream& stream) -> Task<Status> {
      while (std::optional<StringValue> message = co_await stream.read()) {
        if (!co_await stream.write(*message)) break;
      }
      co_return Status();
    });
    coro("CoroSum", MethodKind::kClientStreaming, [](Stream& stream) -> Task<Status> {
      std::string sum;
      while (std::optional<StringValue> message = co_await stream.read()) {
        sum += (sum.empty() ? "" : "+") + message->value();
      }
      co_await stream.write(text(sum));
      co_return Status();
    });
    coro("CoroSleep", MethodKind::kUnary, [](Stream&) -> Task<Status> {
      const libnet::coro::Errc slept = co_await libnet::coro::sleep(std::chrono::hours(1));
      if (slept == libnet::coro::Errc::kCancelled) ++cancels;
      co_return Status();
    });
    coro("CoroThrow", MethodKind::kUnary, [](Stream&) -> Task<Status> {
      throw std::runtime_error("the coroutine threw");
      co_return Status();
    });
    coro("CoroTimeout", MethodKind::kUnary, [](Stream&) -> Task<Status> {
      const libnet::coro::Errc slept = co_await libnet::coro::withTimeout(
          std::chrono::milliseconds(50), libnet::coro::sleep(std::chrono::hours(1)));
      co_return Status(StatusCode::kAborted, std::string(libnet::coro::errcName(slept)));
    });
  }

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
      if (!key.starts_with("x-") || key.starts_with("x-status") || key.starts_with("x-message"))
        continue;
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
  int maxDeadlineMs = 0;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  libnet::Flags flags("grpc_test_server",
                      "usage: grpc_test_server [--address IP] [--port N] "
                      "[--backend epoll|uring|auto] [--threads N] [--max-receive N] "
                      "[--max-send N] [--max-deadline-ms N] [--tls-cert FILE --tls-key FILE]\n");
  libnet::ServerTls tls;
  tls.addTo(&flags);
  flags.addAddress("--address", &address);
  flags.addPort("--port", &port);
  flags.addBackend("--backend", &backend);
  flags.addInt("--threads", &threads, 0, 64);
  flags.addInt("--max-receive", &maxReceive, 1, 1 << 30);
  flags.addInt("--max-send", &maxSend, 1, 1 << 30);
  flags.addInt("--max-deadline-ms", &maxDeadlineMs, 0, 1 << 30);
  if (const std::optional<int> exit = flags.parse(argc, argv)) return *exit;

  libnet::EventLoop loop(backend);
  libnet::http::HttpServer::Options options;
  options.threads = threads;
  if (const std::string problem = tls.check(); !problem.empty()) {
    std::fprintf(stderr, "grpc_test_server: %s\n", problem.c_str());
    return 2;
  }
  options.layer = tls.layer({"h2", "http/1.1"});
  libnet::http::HttpServer http(&loop, *libnet::InetAddress::parse(address, port), "grpc_test",
                                options);
  http.setHandler(
      [](const libnet::http::HttpRequest& request, libnet::http::HttpResponse* response) {
        if (request.path() == "/hello") {
          response->setContentType("text/plain");
          response->setBody("hello\n");
        } else {
          response->setStatusPage(404);
        }
      });
  libnet::grpc::Server server(http, {.maxReceiveMessageBytes = static_cast<size_t>(maxReceive),
                                     .maxSendMessageBytes = static_cast<size_t>(maxSend),
                                     .maxDeadline = std::chrono::milliseconds(maxDeadlineMs)});
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
