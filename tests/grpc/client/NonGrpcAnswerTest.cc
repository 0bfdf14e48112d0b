// ClientCall against an HTTP/2 server that is not a gRPC server (libnet's
// HttpServer answering by path, on another loop thread), on every backend:
// each answer that gRPC's client must not take as a success ends the call
// with the code gRPC gives it (doc/http-grpc-status-mapping.md, PROTOCOL-
// HTTP2.md), and the connection goes on for the next call.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/grpc/Channel.h"
#include "net/grpc/ClientCall.h"
#include "net/grpc/Wire.h"
#include "net/http/HttpServer.h"
#include "net/http2/Http2Server.h"
#include "tests/net/TestUtil.h"

namespace libnet::grpc::test {
namespace {

using libnet::test::runSync;
using libnet::test::waitUntil;

struct End {
  std::mutex mu;
  std::optional<Status> status;
  std::vector<std::string> messages;
};

class NonGrpcAnswerTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    serverThread_ = std::make_unique<EventLoopThread>(nullptr, "h2-server", GetParam());
    serverLoop_ = serverThread_->startLoop();
    clientThread_ = std::make_unique<EventLoopThread>(nullptr, "grpc-client", GetParam());
    clientLoop_ = clientThread_->startLoop();
    runSync(serverLoop_, [&] {
      server_ = std::make_unique<http::HttpServer>(serverLoop_, InetAddress(0, true), "h2",
                                                   http::HttpServer::Options{});
      server_->setHandler([](const http::HttpRequest& request, http::HttpResponse* response) {
        answer(std::string(request.path()), response);
      });
      service_ = http2::serve(*server_, {});
      server_->start();
    });
    const uint16_t port =
        runSync(serverLoop_, [&] { return server_->listenAddress().inet()->port(); });
    channel_ = Channel::create(clientLoop_, "127.0.0.1:" + std::to_string(port), {});
  }

  void TearDown() override {
    if (clientLoop_ != nullptr) runSync(clientLoop_, [&] { channel_.reset(); });
    if (serverLoop_ != nullptr) {
      runSync(serverLoop_, [&] {
        service_.reset();
        server_.reset();
      });
    }
    clientThread_.reset();
    serverThread_.reset();
  }

  static std::string framed(std::string_view payload) {
    std::string out;
    appendFrame(&out, payload, false);
    return out;
  }

  static void answer(const std::string& path, http::HttpResponse* response) {
    response->setStatus(200);
    response->setContentType("application/grpc");
    if (path == "/t.S/Status404") {
      response->setStatus(404);
      response->setContentType("text/plain");
      response->setBody("not here");
    } else if (path == "/t.S/Status503") {
      response->setStatus(503);
    } else if (path == "/t.S/Html") {
      response->setContentType("text/html");
      response->setBody("<html></html>");
    } else if (path == "/t.S/NoStatus") {
      response->setBody(framed("one"));
    } else if (path == "/t.S/Huge") {
      response->setBody(std::string("\x00\xff\xff\xff\xff", 5) + "xxxx");
    } else if (path == "/t.S/BadFlag") {
      response->setBody(std::string("\x07\x00\x00\x00\x01x", 6));
    } else if (path == "/t.S/Compressed") {
      response->setBody(std::string("\x01\x00\x00\x00\x01x", 6));
    } else if (path == "/t.S/Cut") {
      response->setBody(
          std::string("\x00\x00\x00\x00\x10"
                      "abc",
                      8));
    } else if (path == "/t.S/BadEncoding") {
      response->addHeader("grpc-encoding", "snappy");
      response->setBody(framed("x"));
    }
  }

  std::shared_ptr<End> call(const std::string& path) {
    auto end = std::make_shared<End>();
    auto c = ClientCall::start(channel_, path, {},
                               {.onMessage =
                                    [end](std::string m) {
                                      std::lock_guard<std::mutex> lock(end->mu);
                                      end->messages.push_back(std::move(m));
                                    },
                                .onFinish =
                                    [end](const Status& s, const Metadata&) {
                                      std::lock_guard<std::mutex> lock(end->mu);
                                      end->status = s;
                                    }});
    c->write("request");
    c->halfClose();
    waitUntil([&] {
      std::lock_guard<std::mutex> lock(end->mu);
      return end->status.has_value();
    });
    return end;
  }

  StatusCode code(const std::string& path) {
    const auto end = call(path);
    std::lock_guard<std::mutex> lock(end->mu);
    return end->status.value_or(Status(StatusCode::kOk, "no end")).code();
  }

  std::unique_ptr<EventLoopThread> serverThread_;
  std::unique_ptr<EventLoopThread> clientThread_;
  EventLoop* serverLoop_ = nullptr;
  EventLoop* clientLoop_ = nullptr;
  std::unique_ptr<http::HttpServer> server_;
  std::shared_ptr<http2::Service> service_;
  std::shared_ptr<Channel> channel_;
};

TEST_P(NonGrpcAnswerTest, HttpStatusIsMapped) {
  EXPECT_EQ(code("/t.S/Status404"), StatusCode::kUnimplemented);
  EXPECT_EQ(code("/t.S/Status503"), StatusCode::kUnavailable);
}

TEST_P(NonGrpcAnswerTest, WrongContentTypeIsUnknown) {
  EXPECT_EQ(code("/t.S/Html"), StatusCode::kUnknown);
}

TEST_P(NonGrpcAnswerTest, NoGrpcStatusIsUnknownAfterTheMessages) {
  const auto end = call("/t.S/NoStatus");
  std::lock_guard<std::mutex> lock(end->mu);
  ASSERT_TRUE(end->status);
  EXPECT_EQ(end->status->code(), StatusCode::kUnknown);
  EXPECT_EQ(end->messages, std::vector<std::string>{"one"});
}

TEST_P(NonGrpcAnswerTest, FramingIsNeverTrusted) {
  // A 4 GiB length prefix fails from the prefix alone.
  EXPECT_EQ(code("/t.S/Huge"), StatusCode::kResourceExhausted);
  EXPECT_EQ(code("/t.S/BadFlag"), StatusCode::kInternal);
  EXPECT_EQ(code("/t.S/Compressed"), StatusCode::kInternal);
  EXPECT_EQ(code("/t.S/Cut"), StatusCode::kInternal);
  EXPECT_EQ(code("/t.S/BadEncoding"), StatusCode::kInternal);
  // One connection served them all.
  EXPECT_EQ(channel_->connectionsMade(), 1U);
}

INSTANTIATE_TEST_SUITE_P(Backends, NonGrpcAnswerTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         libnet::test::pollerName);

}  // namespace
}  // namespace libnet::grpc::test
