// http2::serve() on a real HttpServer, over loopback sockets, on every
// backend: HTTP/1.1 and HTTP/2 with prior knowledge on one port with one
// handler, the header deadline of a client that stops inside the preface,
// the close of a client that never opens its window or opens it a byte at a
// time, and GOAWAY on a graceful stop. The frames are read off the socket.
#include "net/http2/Http2Server.h"

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/http/HttpServer.h"
#include "tests/net/TestUtil.h"
#include "tests/net/http2/session/H2Peer.h"

namespace libnet::http2 {
namespace {

using namespace std::chrono_literals;
using libnet::test::BlockingClient;
using libnet::test::runSync;
using test::frame;
using test::Frame;

const std::string kBig(300 * 1000, 'z');

// Reads frames off one client socket, keeping a partial frame for the next
// call.
class FrameReader {
 public:
  explicit FrameReader(BlockingClient* client) : client_(client) {}

  // Reads until a frame satisfies `done` or the server closes (or the
  // socket's receive timeout passes); returns every frame read.
  template <class Done>
  std::vector<Frame> until(Done&& done, bool* closed = nullptr) {
    std::vector<Frame> frames;
    char buf[65536];
    for (;;) {
      std::vector<Frame> now = test::parseFrames(bytes_);
      size_t used = 0;
      for (Frame& f : now) {
        used += 9 + f.payload.size();
        frames.push_back(std::move(f));
        if (done(frames.back())) {
          bytes_.erase(0, used);
          return frames;
        }
      }
      bytes_.erase(0, used);
      const ssize_t n = ::recv(client_->fd(), buf, sizeof buf, 0);
      if (n <= 0) {
        if (closed != nullptr) *closed = n == 0;
        return frames;
      }
      bytes_.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  BlockingClient* client_;
  std::string bytes_;
};

bool never(const Frame&) { return false; }

bool endsStream(const Frame& f, int32_t stream) {
  return f.stream == stream && (f.flags & NGHTTP2_FLAG_END_STREAM) != 0 &&
         (f.type == NGHTTP2_DATA || f.type == NGHTTP2_HEADERS);
}

std::string bodyOf(const std::vector<Frame>& frames, int32_t stream) {
  std::string body;
  for (const Frame& f : frames) {
    if (f.type == NGHTTP2_DATA && f.stream == stream) body += f.payload;
  }
  return body;
}

class Http2ServerTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "h2", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    if (server_) runSync(loop_, [&] { server_.reset(); });
    thread_.reset();
  }

  void startServer(http::HttpServer::Options options = {}) {
    runSync(loop_, [&] {
      server_ = std::make_unique<http::HttpServer>(loop_, InetAddress(0, true), "h2", options);
      server_->setHandler([](const http::HttpRequest& request, http::HttpResponse* response) {
        response->setBody(
            request.path() == "/big" ? kBig : std::string(http::versionName(request.version())));
      });
      service_ = serve(*server_, {});
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<http::HttpServer> server_;
  std::shared_ptr<Service> service_;
  SocketAddress address_;
};

TEST_P(Http2ServerTest, OnePortOneHandlerBothProtocols) {
  startServer();
  BlockingClient h2(address_);
  ASSERT_TRUE(h2.sendAll(test::prefaceAndSettings() +
                         frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM,
                               1, test::getBlock("/v"))));
  const auto frames = FrameReader(&h2).until([](const Frame& f) { return endsStream(f, 1); });
  EXPECT_EQ(bodyOf(frames, 1), "HTTP/2");
  EXPECT_EQ(frames.front().type, NGHTTP2_SETTINGS);  // the server's, first

  BlockingClient h1(address_);
  ASSERT_TRUE(h1.sendAll("GET /v HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string answer;
  while (!answer.ends_with("\r\n\r\nHTTP/1.1")) {
    const std::string more = h1.recvExactly(1);
    if (more.empty()) break;
    answer += more;
  }
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  EXPECT_TRUE(answer.ends_with("\r\n\r\nHTTP/1.1")) << answer;
  EXPECT_EQ(service_->connections(), 1U);
}

TEST_P(Http2ServerTest, ABrokenPrefaceIsAGoAwayAndABareLfRequestStillHttp1) {
  startServer();
  BlockingClient broken(address_);
  ASSERT_TRUE(broken.sendAll("INVALID CONNECTION PREFACE\r\n\r\n"));
  bool closed = false;
  const auto frames = FrameReader(&broken).until(never, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(test::goAwayCode(frames), NGHTTP2_PROTOCOL_ERROR);

  BlockingClient h1(address_);
  ASSERT_TRUE(h1.sendAll("GET /v HTTP/1.1\nHost: x\nConnection: close\n\n"));
  bool eof = false;
  const std::string answer = h1.recvUntilEof(&eof);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  EXPECT_TRUE(answer.ends_with("HTTP/1.1")) << answer;
}

TEST_P(Http2ServerTest, AClientStoppedInsideThePrefaceIsClosedAtTheHeaderDeadline) {
  startServer({.idleTimeout = Duration::zero(), .headerTimeout = 200ms});
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(test::kPreface.substr(0, 10)));
  bool eof = false;
  client.recvUntilEof(&eof);
  EXPECT_TRUE(eof);
}

TEST_P(Http2ServerTest, AClientThatNeverOpensItsWindowIsClosedAfterTheIdleTimeout) {
  startServer({.idleTimeout = 300ms});
  BlockingClient client(address_);
  // INITIAL_WINDOW_SIZE 0, then GET /big: not one byte of its body may go.
  const std::string settings("\x00\x04\x00\x00\x00\x00", 6);
  ASSERT_TRUE(
      client.sendAll(std::string(test::kPreface) + frame(NGHTTP2_SETTINGS, 0, 0, settings) +
                     frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                           test::getBlock("/big"))));
  // Keep-alive traffic from the client does not count as progress.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.sendAll(frame(NGHTTP2_PING, 0, 0, std::string(8, 'k'))));
  }
  bool closed = false;
  const auto frames = FrameReader(&client).until(never, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(bodyOf(frames, 1), "");
}

// A window opened a byte at a time (every 50 ms): bytes move, but far
// under the minimum rate (1024 bytes a second by default, over each idle
// timeout), so the connection is closed anyway. Any byte used to count as
// progress, and such a client held its answers forever.
TEST_P(Http2ServerTest, AWindowOpenedAByteAtATimeIsClosedUnderTheMinimumRate) {
  startServer({.idleTimeout = 300ms});
  BlockingClient client(address_);
  const std::string settings("\x00\x04\x00\x00\x00\x00", 6);
  ASSERT_TRUE(
      client.sendAll(std::string(test::kPreface) + frame(NGHTTP2_SETTINGS, 0, 0, settings) +
                     frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                           test::getBlock("/big"))));
  const std::string one("\x00\x00\x00\x01", 4);
  size_t received = 0;
  bool closed = false;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!closed && std::chrono::steady_clock::now() < deadline) {
    // The pace of the client: a byte of window, then 50 ms of reading.
    if (!client.sendAll(frame(NGHTTP2_WINDOW_UPDATE, 0, 1, one) +
                        frame(NGHTTP2_WINDOW_UPDATE, 0, 0, one))) {
      closed = true;
      break;
    }
    pollfd pfd{client.fd(), POLLIN, 0};
    while (!closed && ::poll(&pfd, 1, 50) > 0) {
      char buf[4096];
      const ssize_t n = ::recv(client.fd(), buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        received += static_cast<size_t>(n);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        closed = true;
      }
    }
  }
  EXPECT_TRUE(closed) << received << " bytes received in 10 s";
}

TEST_P(Http2ServerTest, GoAwayAnswersStreamsInFlightThenSaysDone) {
  startServer();
  BlockingClient client(address_);
  FrameReader reader(&client);
  // A window of 0 holds the answer to GET /big in flight.
  const std::string settings("\x00\x04\x00\x00\x00\x00", 6);
  ASSERT_TRUE(
      client.sendAll(std::string(test::kPreface) + frame(NGHTTP2_SETTINGS, 0, 0, settings) +
                     frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                           test::getBlock("/big"))));
  reader.until([](const Frame& f) { return f.type == NGHTTP2_HEADERS; });
  std::atomic<bool> done{false};
  service_->goAway([&done] { done = true; });
  const auto goAway = reader.until([](const Frame& f) { return f.type == NGHTTP2_GOAWAY; });
  EXPECT_EQ(test::goAwayCode(goAway), NGHTTP2_NO_ERROR);
  // Now the window opens (the stream's and the connection's): the answer
  // comes whole, then the server half-closes.
  const std::string open("\x00\x04\x00\x10\x00\x00", 6);  // INITIAL_WINDOW_SIZE 1 MiB
  const std::string increment("\x00\x10\x00\x00", 4);
  ASSERT_TRUE(client.sendAll(frame(NGHTTP2_SETTINGS, 0, 0, open) +
                             frame(NGHTTP2_WINDOW_UPDATE, 0, 0, increment)));
  bool closed = false;
  const auto rest = reader.until(never, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(bodyOf(goAway, 1).size() + bodyOf(rest, 1).size(), kBig.size());
  EXPECT_FALSE(done.load());  // the client has not closed its side yet
  client.close();
  EXPECT_TRUE(libnet::test::waitUntil([&] { return done.load(); }));
  EXPECT_EQ(service_->connections(), 0U);
}

INSTANTIATE_TEST_SUITE_P(Backends, Http2ServerTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         libnet::test::pollerName);

}  // namespace
}  // namespace libnet::http2
