// co_await http::read(reader) (RequestBodyReader) on a real HttpServer with
// a router that streams bodies, on every backend: a coroutine that sleeps
// between reads gets every piece of 2 MiB (Content-Length and chunked) in
// order, the body paused while it sleeps (at most one piece held); a client
// that resets mid-body ends the read (kClosed, or kCancelled by
// coroHandler's stop).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/coro/Errc.h"
#include "net/coro/Sleep.h"
#include "net/http/CoroHandler.h"
#include "net/http/HttpServer.h"
#include "net/http/RequestBodyReader.h"
#include "tests/net/TestUtil.h"

namespace libnet::http {
namespace {

using test::BlockingClient;
using test::randomBytes;
using test::runSync;
using test::waitUntil;

class RequestBodyReaderTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "http", GetParam());
    loop_ = thread_->startLoop();
    runSync(loop_, [&] {
      server_ = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "coro");
      server_->setRouter([](const HttpRequest&) { return HttpServer::Route::kStreamedBody; });
      server_->setAsyncHandler(coroHandler([this](HttpRequest,
                                                  ResponseWriterPtr writer) -> coro::Task<> {
        RequestBodyReader reader(writer->requestBody());
        std::string body;
        for (int i = 0;; ++i) {
          BodyPiece piece = co_await read(reader);
          if (piece.status != coro::Errc::kOk) {
            ended_ = piece.status;
            if (piece.status != coro::Errc::kEof) co_return;
            break;
          }
          body += piece.data;
          ++pieces_;
          // Busy elsewhere now and then: the body waits meanwhile.
          if (i % 16 == 0) co_await coro::sleep(std::chrono::milliseconds(1));
        }
        HttpResponse response(false);
        response.setBody(std::to_string(body.size()) + (body == expected_ ? " same" : " differs"));
        writer->respond(std::move(response));
      }));
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  void TearDown() override {
    if (server_) runSync(loop_, [&] { server_.reset(); });
    thread_.reset();
  }

  std::string answerTo(BlockingClient& client) {
    std::string all;
    while (all.find(" same") == std::string::npos && all.find(" differs") == std::string::npos) {
      const std::string more = client.recvExactly(1);
      if (more.empty()) break;
      all += more;
    }
    return all;
  }

  const std::string expected_ = randomBytes(2 * 1024 * 1024, 9);
  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<HttpServer> server_;
  SocketAddress address_;
  std::atomic<coro::Errc> ended_{coro::Errc::kOk};
  std::atomic<int> pieces_{0};
};

TEST_P(RequestBodyReaderTest, ReadsEveryPieceInOrderWhileBusyElsewhere) {
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("POST /u HTTP/1.1\r\nHost: t\r\nContent-Length: " +
                             std::to_string(expected_.size()) + "\r\n\r\n" + expected_));
  EXPECT_TRUE(answerTo(client).ends_with(std::to_string(expected_.size()) + " same"));
  EXPECT_EQ(ended_.load(), coro::Errc::kEof);
  // Chunked, on the same connection.
  std::string chunked = "POST /u HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (size_t at = 0; at < expected_.size(); at += 100000) {
    const std::string part = expected_.substr(at, 100000);
    char size[16];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    chunked += size + part + "\r\n";
  }
  ASSERT_TRUE(client.sendAll(chunked + "0\r\n\r\n"));
  EXPECT_TRUE(answerTo(client).ends_with(std::to_string(expected_.size()) + " same"));
  // No body: the first read is the end.
  ended_ = coro::Errc::kOk;
  ASSERT_TRUE(client.sendAll("GET /u HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_TRUE(answerTo(client).ends_with("\r\n0 differs"));
  EXPECT_EQ(ended_.load(), coro::Errc::kEof);
}

TEST_P(RequestBodyReaderTest, ClientResetEndsTheRead) {
  auto client = std::make_unique<BlockingClient>(address_);
  ASSERT_TRUE(client->sendAll("POST /u HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n" +
                              std::string(1000, 'x')));
  // Reset only once the server has the body (a reset before it reads the
  // request would drop the request with it).
  ASSERT_TRUE(waitUntil([&] { return pieces_.load() > 0; }));
  client->resetConnection();
  ASSERT_TRUE(waitUntil([&] { return ended_.load() != coro::Errc::kOk; }));
  const coro::Errc e = ended_.load();
  EXPECT_TRUE(e == coro::Errc::kCancelled || e == coro::Errc::kClosed) << coro::errcName(e);
}

INSTANTIATE_TEST_SUITE_P(Backends, RequestBodyReaderTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::http
