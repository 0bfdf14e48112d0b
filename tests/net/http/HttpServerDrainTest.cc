// HttpServer::drain over real loopback sockets, on every backend: idle
// keep-alive connections close, the keep-alive race's grace, a request still
// arriving is finished with Connection: close, pipelined requests are all
// answered, HTTP/2 connections get GOAWAY.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/http/HttpServer.h"
#include "net/http2/Http2Server.h"
#include "tests/net/TestUtil.h"

namespace libnet::http {
namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

struct Response {
  bool complete = false;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// Reads responses (each with a Content-Length) off one client socket.
class ResponseReader {
 public:
  explicit ResponseReader(BlockingClient* client) : client_(client) {}

  Response next() {
    Response r;
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return r;
    }
    const std::string head = pending_.substr(0, end);
    pending_.erase(0, end + 4);
    size_t lineEnd = head.find("\r\n");
    while (lineEnd != std::string::npos) {
      const size_t start = lineEnd + 2;
      lineEnd = head.find("\r\n", start);
      const std::string line =
          head.substr(start, lineEnd == std::string::npos ? std::string::npos : lineEnd - start);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) return r;
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    const size_t n = std::stoul(r.headers["content-length"]);
    while (pending_.size() < n) {
      if (!fill()) return r;
    }
    r.body = pending_.substr(0, n);
    pending_.erase(0, n);
    r.complete = true;
    return r;
  }

  // True if the server closed the connection, with nothing more sent.
  bool closedByServer() {
    while (fill()) {
    }
    return eof_ && pending_.empty();
  }

  bool fill() {
    char buf[65536];
    ssize_t n;
    do {
      n = ::recv(client_->fd(), buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n == 0) eof_ = true;
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }

  std::string& pending() { return pending_; }

 private:
  BlockingClient* client_;
  std::string pending_;
  bool eof_ = false;
};

std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n"; }

class HttpServerDrainTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "server", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    if (server_) runSync(loop_, [&] { server_.reset(); });
    thread_.reset();
  }

  // Answers every request with its path and body; with `h2`, HTTP/2 too.
  void startServer(Duration grace, bool h2 = false) {
    runSync(loop_, [&] {
      server_ = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "drain",
                                             HttpServer::Options{.drainGrace = grace});
      server_->setHandler([](const HttpRequest& request, HttpResponse* response) {
        response->setBody(std::string(request.path()) + ":" + request.body());
      });
      if (h2) (void)http2::serve(*server_, {});
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  std::future<void> drain(Duration deadline) {
    auto done = std::make_shared<std::promise<void>>();
    std::future<void> ready = done->get_future();
    runSync(loop_, [&] { server_->drain(deadline, [done] { done->set_value(); }); });
    // Without I/O threads the connections are told on this loop as soon as
    // the listening socket is closed: from then on the drain is in force.
    EXPECT_TRUE(waitUntil(
        [&] { return runSync(loop_, [&] { return server_->tcpServer().stoppedAccepting(); }); }));
    return ready;
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<HttpServer> server_;
  SocketAddress address_;
};

bool ready(std::future<void>& f) { return f.wait_for(test::kWait) == std::future_status::ready; }

TEST_P(HttpServerDrainTest, IdleKeepAliveClosesAtOnce) {
  startServer(Duration::zero());
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(client.sendAll(get("/a")));
  const Response first = reader.next();
  ASSERT_TRUE(first.complete);
  EXPECT_EQ(first.headers.count("connection"), 0u);  // keep-alive
  std::future<void> done = drain(std::chrono::seconds(30));
  EXPECT_TRUE(reader.closedByServer());
  client.close();
  EXPECT_TRUE(ready(done));
}

TEST_P(HttpServerDrainTest, RecentlyIdleGetsOneMoreRequestWithConnectionClose) {
  // The keep-alive race: a client that sends its next request right after
  // the drain started is answered, not cut off.
  startServer(std::chrono::seconds(20));
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(client.sendAll(get("/a")));
  ASSERT_TRUE(reader.next().complete);
  std::future<void> done = drain(std::chrono::seconds(30));
  ASSERT_TRUE(client.sendAll(get("/b")));
  Response second = reader.next();
  ASSERT_TRUE(second.complete);
  EXPECT_EQ(second.body, "/b:");
  EXPECT_EQ(second.headers["connection"], "close");
  EXPECT_TRUE(reader.closedByServer());
  client.close();
  EXPECT_TRUE(ready(done));
}

TEST_P(HttpServerDrainTest, RequestStillArrivingIsFinishedWithConnectionClose) {
  startServer(Duration::zero());
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(client.sendAll("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n01234"));
  ASSERT_TRUE(waitUntil([&] { return server_->bufferedBodyBytes() > 0; }));
  std::future<void> done = drain(std::chrono::seconds(30));
  ASSERT_TRUE(client.sendAll("56789"));
  Response r = reader.next();
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.body, "/up:0123456789");
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_TRUE(reader.closedByServer());
  client.close();
  EXPECT_TRUE(ready(done));
}

TEST_P(HttpServerDrainTest, PipelinedRequestsAreAllAnswered) {
  startServer(Duration::zero());
  BlockingClient client(address_);
  ResponseReader reader(&client);
  // The second request's start arrives with the first: mid-request at the drain.
  ASSERT_TRUE(client.sendAll(get("/1") + "GET /2 HT"));
  Response first = reader.next();
  ASSERT_TRUE(first.complete);
  EXPECT_EQ(first.body, "/1:");
  std::future<void> done = drain(std::chrono::seconds(30));
  ASSERT_TRUE(client.sendAll("TP/1.1\r\nHost: t\r\n\r\n" + get("/3")));
  Response second = reader.next();
  Response third = reader.next();
  ASSERT_TRUE(second.complete);
  ASSERT_TRUE(third.complete);
  EXPECT_EQ(second.body, "/2:");
  EXPECT_EQ(third.body, "/3:");
  EXPECT_EQ(third.headers["connection"], "close");
  EXPECT_TRUE(reader.closedByServer());
  client.close();
  EXPECT_TRUE(ready(done));
}

TEST_P(HttpServerDrainTest, Http2ConnectionGetsGoAway) {
  startServer(Duration::zero(), /*h2=*/true);
  BlockingClient client(address_);
  ResponseReader reader(&client);
  // Client preface and an empty SETTINGS frame.
  const std::string preface("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0", 33);
  ASSERT_TRUE(client.sendAll(preface));
  // The server's SETTINGS: the connection is HTTP/2's now.
  ASSERT_TRUE(waitUntil([&] { return reader.pending().size() >= 9 || !reader.fill(); }));
  ASSERT_GE(reader.pending().size(), 9u);
  EXPECT_EQ(reader.pending()[3], '\x04');
  std::future<void> done = drain(std::chrono::seconds(30));
  bool goAway = false;
  for (;;) {
    std::string& p = reader.pending();
    while (p.size() >= 9) {
      const size_t length = (static_cast<unsigned char>(p[0]) << 16) |
                            (static_cast<unsigned char>(p[1]) << 8) |
                            static_cast<unsigned char>(p[2]);
      if (p.size() < 9 + length) break;
      if (p[3] == '\x07') goAway = true;
      p.erase(0, 9 + length);
    }
    if (goAway || !reader.fill()) break;
  }
  EXPECT_TRUE(goAway);
  client.close();
  EXPECT_TRUE(ready(done));
}

INSTANTIATE_TEST_SUITE_P(Backends, HttpServerDrainTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::http
