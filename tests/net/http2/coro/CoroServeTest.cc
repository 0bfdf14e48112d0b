// http2::serveConnection() (net/http2/CoroServe.h) on a coroutine server over
// both backends, with a raw-frame client: the preface the caller has read is
// fed first, requests are answered, a client's half-close is answered before
// the end, and its deadlines alone end a connection (the TcpServer's idle
// timeout is off here): the header deadline, a zero window, a window opened
// a byte at a time, and a client that does not read while answers are pending; a stop request is a
// GOAWAY after which the stream in flight is answered. An AsyncHandler's
// writer answers from another thread while the connection waits on input, and
// a router's kStreamedBody hands the body over in pieces.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/http/HttpServer.h"
#include "net/http/RequestBody.h"
#include "net/http/ResponseWriter.h"
#include "net/http2/CoroServe.h"
#include "net/http2/ServerSession.h"
#include "tests/net/TestUtil.h"

using namespace libnet;
using namespace std::chrono_literals;

namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr uint8_t kData = 0x0, kHeaders = 0x1, kSettings = 0x4, kGoAway = 0x7;
constexpr uint8_t kWindowUpdate = 0x8;
constexpr size_t kBigBody = 4 * 1024 * 1024;
constexpr auto kHeaderTimeout = 1s;
constexpr auto kIdleTimeout = 1s;

std::string frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
  std::string out;
  const size_t n = payload.size();
  out += {static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
  out += {static_cast<char>(type), static_cast<char>(flags)};
  out += {static_cast<char>(stream >> 24), static_cast<char>(stream >> 16),
          static_cast<char>(stream >> 8), static_cast<char>(stream)};
  out += payload;
  return out;
}

std::string u32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string settings(uint16_t id, uint32_t value) {
  return frame(kSettings, 0, 0,
               std::string{static_cast<char>(id >> 8), static_cast<char>(id)} + u32(value));
}

// HEADERS (END_STREAM | END_HEADERS) for GET `path`: :method GET and :scheme
// http from HPACK's static table, :authority and :path as literals.
std::string get(uint32_t stream, std::string_view path) {
  std::string block = "\x82\x86\x01\x01t";
  block += {'\x04', static_cast<char>(path.size())};
  block += path;
  return frame(kHeaders, 0x5, stream, block);
}

// HEADERS (END_HEADERS only: a body follows) for POST `path`, and its body
// as one DATA frame with END_STREAM.
std::string post(uint32_t stream, std::string_view path, std::string_view body) {
  std::string block = "\x83\x86\x01\x01t";
  block += {'\x04', static_cast<char>(path.size())};
  block += path;
  return frame(kHeaders, 0x4, stream, block) + frame(kData, 0x1, stream, body);
}

struct Frame {
  uint8_t type = 0xff;  // none: the connection ended first
  uint8_t flags = 0;
  uint32_t stream = 0;
  std::string payload;
};

Frame readFrame(BlockingClient& client) {
  const std::string head = client.recvExactly(9);
  if (head.size() != 9) return {};
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(head[i]); };
  Frame f{
      byte(3),
      byte(4),
      (uint32_t{byte(5)} & 0x7f) << 24 | uint32_t{byte(6)} << 16 | uint32_t{byte(7)} << 8 | byte(8),
      {}};
  const size_t length = size_t{byte(0)} << 16 | size_t{byte(1)} << 8 | byte(2);
  f.payload = client.recvExactly(length);
  if (f.payload.size() != length) return {};
  return f;
}

class CoroServeTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    config_.handler = [](const http::HttpRequest& request, http::HttpResponse* response) {
      response->setStatus(200);
      response->setBody(request.path() == "/big" ? std::string(kBigBody, 'b') : "hello world\n");
    };
    thread_ = std::make_unique<EventLoopThread>(nullptr, "server", GetParam());
    loop_ = thread_->startLoop();
    runSync(loop_, [&] {
      // No idle timeout of the TcpServer's: only serveConnection's deadlines
      // can end a connection.
      server_ = std::make_unique<TcpServer>(loop_, InetAddress(0, true), "h2",
                                            TcpServer::Options{.maxQueuedOutput = 256 * 1024});
      coro::serve(*server_, [this](coro::Stream stream) { return serve(std::move(stream)); });
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  void TearDown() override {
    if (server_) runSync(loop_, [&] { server_.reset(); });
    thread_.reset();
  }

  // The caller's part: it has read the preface (left unread for the session).
  coro::Task<> serve(coro::Stream stream) {
    const coro::Input preface = co_await stream.readAtLeast(kPreface.size());
    if (preface && preface.view() == kPreface) {
      co_await http2::serveConnection(stream, config_, kHeaderTimeout, kIdleTimeout,
                                      stop_.get_token());
    }
    ++ended_;
  }

  http2::ServerSession::Config config_;
  std::stop_source stop_;
  std::atomic<int> ended_{0};
  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  SocketAddress address_;
};

// Reads frames until stream 1's DATA ends; returns its body, and whether its
// HEADERS said 200 (HPACK static index 8).
std::string readAnswer(BlockingClient& client, bool* ok) {
  std::string body;
  *ok = false;
  for (;;) {
    const Frame f = readFrame(client);
    if (f.type == 0xff) return body;
    if (f.stream != 1) continue;
    if (f.type == kHeaders) *ok = !f.payload.empty() && f.payload[0] == '\x88';
    if (f.type == kData) body += f.payload;
    if ((f.type == kData || f.type == kHeaders) && (f.flags & 0x1) != 0) return body;
  }
}

TEST_P(CoroServeTest, AnswersWithTheCallersPrefaceFedFirst) {
  BlockingClient client(address_);
  // One write: the caller's read takes the preface and more.
  ASSERT_TRUE(client.sendAll(std::string(kPreface) + settings(0x4, 65535) + get(1, "/hello")));
  bool ok = false;
  EXPECT_EQ(readAnswer(client, &ok), "hello world\n");
  EXPECT_TRUE(ok);
}

TEST_P(CoroServeTest, AnswersBeforeEndingAfterTheClientsHalfClose) {
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(std::string(kPreface) + settings(0x4, 65535) + get(1, "/hello")));
  client.shutdownWrite();
  bool ok = false;
  EXPECT_EQ(readAnswer(client, &ok), "hello world\n");
  EXPECT_TRUE(ok);
  bool eof = false;
  client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);
  EXPECT_TRUE(waitUntil([&] { return ended_ == 1; }));
}

TEST_P(CoroServeTest, HeaderDeadlineSendsGoAwayAndEnds) {
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(kPreface));  // and no SETTINGS
  const auto started = std::chrono::steady_clock::now();
  Frame f;
  do {
    f = readFrame(client);
  } while (f.type != kGoAway && f.type != 0xff);
  ASSERT_EQ(f.type, kGoAway);
  EXPECT_EQ(f.payload.substr(4, 4), u32(0));  // NO_ERROR
  EXPECT_GE(std::chrono::steady_clock::now() - started, kHeaderTimeout - 200ms);
  bool eof = false;
  client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);
  EXPECT_TRUE(waitUntil([&] { return ended_ == 1; }));
}

TEST_P(CoroServeTest, ZeroWindowEndsAfterTheIdleTimeout) {
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(std::string(kPreface) + settings(0x4, 0) + get(1, "/big")));
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(waitUntil([&] { return ended_ == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - started, kIdleTimeout - 200ms);
  // Its output had room: the GOAWAY (NO_ERROR) went out before the close.
  Frame f;
  do {
    f = readFrame(client);
  } while (f.type != kGoAway && f.type != 0xff);
  ASSERT_EQ(f.type, kGoAway);
  EXPECT_EQ(f.payload.substr(4, 4), u32(0));
}

// Bytes move, a byte of window every 50 ms, but under the session's
// minimum rate (1024 bytes a second over each idle timeout): the connection
// ends all the same (any byte used to count as progress).
TEST_P(CoroServeTest, AWindowOpenedAByteAtATimeEndsUnderTheMinimumRate) {
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(std::string(kPreface) + settings(0x4, 0) + get(1, "/big")));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ended_ == 0 && std::chrono::steady_clock::now() < deadline) {
    if (!client.sendAll(frame(kWindowUpdate, 0, 1, u32(1)) + frame(kWindowUpdate, 0, 0, u32(1)))) {
      break;
    }
    waitUntil([&] { return ended_ == 1; }, 50ms);  // the client's pace
  }
  // Ended while the client still trickled (a stalled client would be ended
  // once it stopped, one idle timeout later).
  EXPECT_EQ(ended_, 1) << "still served after 10 s of a byte of window every 50 ms";
}

TEST_P(CoroServeTest, ClientThatDoesNotReadEndsAfterTheIdleTimeout) {
  BlockingClient client(address_, /*rcvbuf=*/16 * 1024);
  constexpr uint32_t kWindow = 0x7fffffff;
  std::string requests = std::string(kPreface) + settings(0x4, kWindow) +
                         frame(kWindowUpdate, 0, 0, u32(kWindow - 65535));
  for (uint32_t id = 1; id < 20; id += 2) requests += get(id, "/big");
  ASSERT_TRUE(client.sendAll(requests));
  const auto started = std::chrono::steady_clock::now();
  // 40 MiB of answers cannot fit in the socket buffers and the 256 KiB
  // output limit: the coroutine waits in a write, under the stall deadline.
  ASSERT_TRUE(waitUntil([&] { return ended_ == 1; }));
  EXPECT_GE(std::chrono::steady_clock::now() - started, kIdleTimeout - 200ms);
  bool eof = false;
  EXPECT_LT(client.recvUntilEof(&eof).size(), 10 * kBigBody / 2);
}

TEST_P(CoroServeTest, StopSendsGoAwayAndFinishesTheStreamInFlight) {
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(std::string(kPreface) + settings(0x4, 65535) + get(1, "/big")));
  // The default windows hold the answer after 64 KiB: the coroutine waits
  // in a read when the stop comes.
  Frame f;
  do {
    f = readFrame(client);
  } while (f.type != kData && f.type != 0xff);
  ASSERT_EQ(f.type, kData);
  stop_.request_stop();
  size_t body = f.payload.size();
  std::string goAway;
  bool ended = false;
  while (!ended) {
    if (f.type == kData) {
      const std::string grant = u32(static_cast<uint32_t>(f.payload.size()));
      ASSERT_TRUE(
          client.sendAll(frame(kWindowUpdate, 0, 1, grant) + frame(kWindowUpdate, 0, 0, grant)));
    }
    f = readFrame(client);
    ASSERT_NE(f.type, 0xff) << body << " bytes of the body";
    if (f.type == kGoAway) goAway = f.payload.substr(0, 8);
    if (f.type == kData) body += f.payload.size();
    ended = f.type == kData && (f.flags & 0x1) != 0;
  }
  EXPECT_EQ(goAway, u32(1) + u32(0));  // last stream 1, NO_ERROR
  EXPECT_EQ(body, kBigBody);
  client.close();
  EXPECT_TRUE(waitUntil([&] { return ended_ == 1; }));
}

TEST_P(CoroServeTest, StopWakesAnIdleConnectionWithGoAway) {
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(std::string(kPreface) + settings(0x4, 65535) + get(1, "/hello")));
  bool ok = false;
  ASSERT_EQ(readAnswer(client, &ok), "hello world\n");
  // Nothing more is asked: the stop comes while the coroutine waits in its
  // read (or just before it gets there), and no input will wake it.
  stop_.request_stop();
  Frame f;
  do {
    f = readFrame(client);
  } while (f.type != kGoAway && f.type != 0xff);
  ASSERT_EQ(f.type, kGoAway);
  EXPECT_EQ(f.payload.substr(0, 8), u32(1) + u32(0));
  bool eof = false;
  client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);
}

TEST_P(CoroServeTest, AsyncHandlerAnswersFromAnotherThreadWhileTheConnectionWaits) {
  std::mutex mutex;
  http::ResponseWriterPtr held;
  runSync(loop_, [&] {
    config_.asyncHandler = [&](const http::HttpRequest&, http::ResponseWriterPtr writer) {
      const std::lock_guard<std::mutex> lock(mutex);
      held = std::move(writer);
    };
  });
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(std::string(kPreface) + settings(0x4, 65535) + get(1, "/later")));
  ASSERT_TRUE(waitUntil([&] {
    const std::lock_guard<std::mutex> lock(mutex);
    return held != nullptr;
  }));
  // This thread, not the loop's: the writer's calls go through the gate and
  // wake the connection out of its read.
  http::ResponseWriterPtr writer;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    writer = std::move(held);
  }
  http::HttpResponse head(false);
  head.setStatus(200);
  writer->start(std::move(head));
  writer->write("answered ");
  writer->write("later\n");
  writer->finish();
  bool ok = false;
  EXPECT_EQ(readAnswer(client, &ok), "answered later\n");
  EXPECT_TRUE(ok);
}

TEST_P(CoroServeTest, RouterStreamsTheRequestBodyToTheHandlerInPieces) {
  runSync(loop_, [&] {
    config_.router = [](const http::HttpRequest&) {
      return http::HttpServer::Route::kStreamedBody;
    };
    config_.asyncHandler = [](const http::HttpRequest&, http::ResponseWriterPtr writer) {
      const http::RequestBodyPtr body = writer->requestBody();
      auto count = std::make_shared<size_t>(0);
      body->setEndCallback([writer, count](http::RequestBody::End end) {
        http::HttpResponse response(false);
        response.setStatus(200);
        response.setBody(end == http::RequestBody::End::kComplete ? std::to_string(*count)
                                                                  : "aborted");
        writer->respond(std::move(response));
      });
      body->setDataCallback([count](std::string_view piece) { *count += piece.size(); });
    };
  });
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(std::string(kPreface) + settings(0x4, 65535) +
                             post(1, "/upload", std::string(1000, 'x'))));
  bool ok = false;
  EXPECT_EQ(readAnswer(client, &ok), "1000");
  EXPECT_TRUE(ok);
}

INSTANTIATE_TEST_SUITE_P(Backends, CoroServeTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
