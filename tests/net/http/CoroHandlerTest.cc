// http::coroHandler() and co_await http::write() on a real HttpServer, on
// every backend: a coroutine streams a body larger than the writer's
// highWater to a client that reads only later (the coroutine waits on the
// writable callback, and the body arrives byte-exact), and a client that
// leaves mid-answer stops the coroutine (its wait ends with kCancelled).
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
#include "net/http/ResponseWriteAwaiter.h"
#include "tests/net/TestUtil.h"

namespace libnet::http {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

constexpr size_t kPiece = 16 * 1024;
constexpr size_t kPieces = 256;  // 4 MiB: past any socket buffers here

std::string pieceOf(size_t i) { return std::string(kPiece, static_cast<char>('a' + i % 26)); }

class CoroHandlerTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "http", GetParam());
    loop_ = thread_->startLoop();
    HttpServer::Options options;
    options.writer = {.highWater = 64 * 1024, .lowWater = 16 * 1024, .maxQueued = 0};
    runSync(loop_, [&] {
      server_ = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "coro", options);
      server_->setAsyncHandler(
          coroHandler([this](HttpRequest request, ResponseWriterPtr writer) -> coro::Task<> {
            if (request.path() == "/hello") {
              co_await coro::sleep(std::chrono::milliseconds(1));  // the request outlives this
              HttpResponse response(false);
              response.setBody("hello " + request.path());
              writer->respond(std::move(response));
              co_return;
            }
            writer->start(HttpResponse(false));
            for (size_t i = 0; i < kPieces; ++i) {
              // Past highWater after this piece: the write is refused, and
              // the coroutine waits.
              if (writer->queuedBytes() + kPiece > 64 * 1024) waited_ = true;
              const coro::Errc e = co_await write(writer, pieceOf(i));
              if (e != coro::Errc::kOk) {
                ended_ = e;
                co_return;
              }
            }
            writer->finish();
            ended_ = coro::Errc::kOk;
          }));
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  void TearDown() override {
    if (server_) runSync(loop_, [&] { server_.reset(); });
    thread_.reset();
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<HttpServer> server_;
  SocketAddress address_;
  std::atomic<coro::Errc> ended_{coro::Errc::kEof};  // kEof: not ended yet
  std::atomic<bool> waited_{false};
};

TEST_P(CoroHandlerTest, RequestIsTheCoroutinesOwnCopy) {
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  bool eof = false;
  const std::string head = client.recvExactly(17);
  EXPECT_EQ(head, "HTTP/1.1 200 OK\r\n");
  client.shutdownWrite();
  const std::string rest = client.recvUntilEof(&eof);
  EXPECT_TRUE(rest.ends_with("hello /hello")) << rest;
}

TEST_P(CoroHandlerTest, WaitsOnBackPressureAndStreamsByteExact) {
  BlockingClient client(address_, 4096);
  ASSERT_TRUE(client.sendAll("GET /stream HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  // Nothing read until the coroutine has had to wait.
  ASSERT_TRUE(waitUntil([&] { return waited_.load(); }));
  EXPECT_EQ(ended_.load(), coro::Errc::kEof);
  bool eof = false;
  const std::string all = client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);
  EXPECT_EQ(ended_.load(), coro::Errc::kOk);
  // Dechunk.
  const size_t headEnd = all.find("\r\n\r\n");
  ASSERT_NE(headEnd, std::string::npos);
  EXPECT_NE(all.substr(0, headEnd).find("Transfer-Encoding: chunked"), std::string::npos);
  std::string body;
  size_t at = headEnd + 4;
  for (;;) {
    const size_t lineEnd = all.find("\r\n", at);
    ASSERT_NE(lineEnd, std::string::npos);
    const size_t size = std::stoul(all.substr(at, lineEnd - at), nullptr, 16);
    if (size == 0) break;
    body.append(all, lineEnd + 2, size);
    at = lineEnd + 2 + size + 2;
  }
  ASSERT_EQ(body.size(), kPiece * kPieces);
  bool exact = true;
  for (size_t i = 0; i < kPieces && exact; ++i)
    exact = body.compare(i * kPiece, kPiece, pieceOf(i)) == 0;
  EXPECT_TRUE(exact);
}

TEST_P(CoroHandlerTest, ClientLeavingStopsTheCoroutine) {
  auto client = std::make_unique<BlockingClient>(address_, 4096);
  ASSERT_TRUE(client->sendAll("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(waitUntil([&] { return waited_.load(); }));
  client->resetConnection();
  ASSERT_TRUE(waitUntil([&] { return ended_.load() != coro::Errc::kEof; }));
  const coro::Errc e = ended_.load();
  EXPECT_TRUE(e == coro::Errc::kCancelled || e == coro::Errc::kClosed) << coro::errcName(e);
}

INSTANTIATE_TEST_SUITE_P(Backends, CoroHandlerTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::http
