// HttpServer's router and request bodies in pieces (Route::kStreamedBody,
// http::RequestBody) over real loopback sockets, on every backend: bodies
// with Content-Length and chunked, hashed piece by piece; a handler that
// pauses while the client sends 64 MiB (what the server reads stays
// bounded) and resumes; a client that resets mid-body; the limits (413 by
// Content-Length, past the limit while chunked); an answer before the body's
// end; "100 Continue" only once the handler asks for the body; the idle
// timeout mid-body, paused or not; the router's other routes and a router
// that throws.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/TcpConnection.h"
#include "net/http/HttpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet::http {
namespace {

using test::BlockingClient;
using test::randomBytes;
using test::runSync;
using test::waitUntil;

// FNV-1a, 64 bits: the body's hash, taken piece by piece.
struct Hash {
  uint64_t value = 1469598103934665603ULL;
  void add(std::string_view bytes) {
    for (const char c : bytes) {
      value ^= static_cast<unsigned char>(c);
      value *= 1099511628211ULL;
    }
  }
  [[nodiscard]] std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(value));
    return out;
  }
};

std::string hashOf(std::string_view bytes) {
  Hash h;
  h.add(bytes);
  return h.hex();
}

struct Answer {
  int status = 0;
  std::string head;
  std::string body;
};

// Reads answers with a Content-Length (all this server's are) off a raw
// socket; "100 Continue" is an answer of its own.
class Reader {
 public:
  explicit Reader(int fd) : fd_(fd) {}
  Answer next() {
    Answer a;
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return a;
    }
    a.head = pending_.substr(0, end + 4);
    pending_.erase(0, end + 4);
    a.status = std::stoi(a.head.substr(9, 3));
    const size_t cl = a.head.find("Content-Length: ");
    if (cl == std::string::npos) return a;
    const size_t n = std::stoul(a.head.substr(cl + 16));
    while (pending_.size() < n) {
      if (!fill()) return a;
    }
    a.body = pending_.substr(0, n);
    pending_.erase(0, n);
    return a;
  }
  bool closedByServer() {
    while (fill()) {
    }
    return eof_;
  }

 private:
  bool fill() {
    char buf[65536];
    ssize_t n;
    do {
      n = ::recv(fd_, buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n == 0) eof_ = true;
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }
  int fd_;
  std::string pending_;
  bool eof_ = false;
};

std::string post(const std::string& path, size_t length, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(length) +
         "\r\n" + extra + "\r\n";
}

std::string chunkedPost(const std::string& path) {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
}

// `body` as chunks of varied sizes (with an extension on one), the last
// chunk and a trailer.
std::string chunked(const std::string& body) {
  static const size_t kSizes[] = {1, 7, 4096, 65537, 300, 100000};
  std::string out;
  size_t pos = 0;
  for (size_t i = 0; pos < body.size(); ++i) {
    const size_t n = std::min(kSizes[i % 6], body.size() - pos);
    char size[32];
    std::snprintf(size, sizeof size, "%zx%s\r\n", n, i == 2 ? ";ext=1" : "");
    out += size;
    out.append(body, pos, n);
    out += "\r\n";
    pos += n;
  }
  return out + "0\r\nX-Trailer: t\r\n\r\n";
}

HttpResponse okWith(std::string body, int status = 200) {
  HttpResponse response(false);
  response.setStatus(status);
  response.setBody(std::move(body));
  return response;
}

class HttpServerStreamedBodyTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "http", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    if (!thread_) return;  // skipped: the backend is not available
    if (server_) runSync(loop_, [&] { server_.reset(); });
    runSync(loop_, [&] { held_.reset(); });
    thread_.reset();
  }

  void startServer(HttpServer::Options options = {}) {
    runSync(loop_, [&] {
      server_ = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "streamed", options);
      server_->setRouter([](const HttpRequest& head) {
        if (head.path() == "/throw") throw 42;
        if (head.path() == "/sync") return HttpServer::Route::kHandler;
        if (head.path() == "/whole") return HttpServer::Route::kAsync;
        return HttpServer::Route::kStreamedBody;
      });
      server_->setHandler([](const HttpRequest& request, HttpResponse* response) {
        response->setBody("sync " + hashOf(request.body()));
      });
      server_->setAsyncHandler(
          [this](const HttpRequest& request, ResponseWriterPtr writer) { route(request, writer); });
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  // The loop thread.
  void route(const HttpRequest& request, const ResponseWriterPtr& writer) {
    const std::string path = request.path();
    const RequestBodyPtr body = writer->requestBody();
    note("handler " + path);
    if (!body) {
      writer->respond(okWith("whole " + hashOf(request.body())));
      return;
    }
    if (path == "/reject") {
      body->setEndCallback([this, path](RequestBody::End end) { noteEnd(path, end, ""); });
      writer->respond(okWith("no", 403));
      return;
    }
    writer->setClosedCallback([this, path] { note("closed " + path); });
    auto hash = std::make_shared<Hash>();
    body->setEndCallback([this, path, writer, body, hash](RequestBody::End end) {
      noteEnd(path, end, hash->hex());
      if (end == RequestBody::End::kComplete) {
        writer->respond(okWith(hash->hex() + " " + std::to_string(body->received())));
      }
    });
    body->setDataCallback([this, path, writer, body, hash](std::string_view piece) {
      hash->add(piece);
      if (path == "/early") {
        writer->respond(okWith("early"));
      } else if (path == "/pause" && !held_) {
        body->pause();
        held_ = body;
        note("paused");
      } else if (path == "/slow" && piece.size() > 0) {
        note("piece " + path);
      }
    });
  }

  void note(const std::string& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(event);
  }
  void noteEnd(const std::string& path, RequestBody::End end, const std::string& hash) {
    note((end == RequestBody::End::kComplete ? "complete " : "aborted ") + path +
         (hash.empty() ? "" : " " + hash));
  }
  bool saw(const std::string& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::find(events_.begin(), events_.end(), event) != events_.end();
  }
  bool sawPrefix(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& e : events_) {
      if (e.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }

  // Bytes the server has read from its connections (loop 0: no I/O threads).
  uint64_t serverBytesReceived() {
    return runSync(loop_, [&] {
      uint64_t sum = 0;
      server_->tcpServer().forEachConnection(
          0, [&](const TcpConnection& conn) { sum += conn.bytesReceived(); });
      return sum;
    });
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<HttpServer> server_;
  SocketAddress address_;
  RequestBodyPtr held_;  // the paused body (loop thread)
  std::mutex mutex_;
  std::vector<std::string> events_;
};

TEST_P(HttpServerStreamedBodyTest, BodiesComeInPiecesWithTheirHashThenPipelinedRequests) {
  startServer();
  const std::string body = randomBytes(3 * 1024 * 1024 + 17, 7);
  BlockingClient client(address_);
  Reader reader(client.fd());
  // Content-Length, then chunked, each with a request pipelined behind it.
  ASSERT_TRUE(client.sendAll(post("/upload", body.size()) + body + post("/whole", 3) + "abc"));
  Answer a = reader.next();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, hashOf(body) + " " + std::to_string(body.size()));
  a = reader.next();
  EXPECT_EQ(a.body, "whole " + hashOf("abc"));
  ASSERT_TRUE(client.sendAll(chunkedPost("/upload") + chunked(body) + post("/sync", 2) + "xy"));
  a = reader.next();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, hashOf(body) + " " + std::to_string(body.size()));
  a = reader.next();
  EXPECT_EQ(a.body, "sync " + hashOf("xy"));
  // A request without a body ends kComplete at once, on a connection kept.
  ASSERT_TRUE(client.sendAll("GET /upload HTTP/1.1\r\nHost: t\r\n\r\n"));
  a = reader.next();
  EXPECT_EQ(a.body, hashOf("") + " 0");
  EXPECT_EQ(a.head.find("Connection: close"), std::string::npos);
  EXPECT_EQ(runSync(loop_, [&] { return server_->bufferedBodyBytes(); }), 0u);
}

TEST_P(HttpServerStreamedBodyTest, PausedBodyHoldsTheClientBackAndResumeCompletesIt) {
  startServer();
  constexpr size_t kSize = 64 * 1024 * 1024;
  const std::string body = randomBytes(kSize, 11);
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(post("/pause", kSize)));
  ASSERT_EQ(::fcntl(client.fd(), F_SETFL, O_NONBLOCK), 0);
  size_t sent = 0;
  // Sends until the socket stays full: the server has stopped reading.
  auto sendUntilStuck = [&](int stuckMs) {
    while (sent < kSize) {
      const ssize_t n = ::send(client.fd(), body.data() + sent, kSize - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
      pollfd p{client.fd(), POLLOUT, 0};
      if (::poll(&p, 1, stuckMs) == 0) return true;
    }
    return true;
  };
  ASSERT_TRUE(sendUntilStuck(500));
  ASSERT_TRUE(waitUntil([&] { return saw("paused"); }));
  const uint64_t read = serverBytesReceived();
  const uint64_t delivered = runSync(loop_, [&] { return held_->received(); });
  EXPECT_LT(sent, kSize) << "the client was never held back";
  // What the server read while paused is about one read, not the body.
  EXPECT_LT(read, 4u * 1024 * 1024) << "sent " << sent;
  EXPECT_LT(read - delivered, 2u * 1024 * 1024);
  runSync(loop_, [&] { held_->resume(); });
  ASSERT_TRUE(sendUntilStuck(10000));
  ASSERT_EQ(sent, kSize);
  ASSERT_EQ(::fcntl(client.fd(), F_SETFL, 0), 0);
  Reader reader(client.fd());
  const Answer a = reader.next();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, hashOf(body) + " " + std::to_string(kSize));
}

TEST_P(HttpServerStreamedBodyTest, ClientResetMidBodyAbortsItAndReachesTheClosedCallback) {
  startServer();
  auto client = std::make_unique<BlockingClient>(address_);
  ASSERT_TRUE(client->sendAll(post("/slow", 100000) + std::string(1000, 'x')));
  ASSERT_TRUE(waitUntil([&] { return saw("piece /slow"); }));
  const linger reset{1, 0};
  ::setsockopt(client->fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  client.reset();
  EXPECT_TRUE(waitUntil([&] { return sawPrefix("aborted /slow"); }));
  EXPECT_TRUE(waitUntil([&] { return saw("closed /slow"); }));
}

TEST_P(HttpServerStreamedBodyTest, LimitIs413ByContentLengthAndAnAbortWhenChunked) {
  HttpServer::Options options;
  options.maxStreamedBodyBytes = 1024 * 1024;
  startServer(options);
  {
    BlockingClient client(address_);
    Reader reader(client.fd());
    ASSERT_TRUE(client.sendAll(post("/upload", 1024 * 1024 + 1)));
    EXPECT_EQ(reader.next().status, 413);
    EXPECT_TRUE(reader.closedByServer());
    EXPECT_FALSE(saw("handler /upload"));
  }
  {
    BlockingClient client(address_);
    Reader reader(client.fd());
    const std::string over = randomBytes(1024 * 1024 + 1, 5);
    ASSERT_TRUE(client.sendAll(chunkedPost("/upload") + chunked(over)));
    EXPECT_EQ(reader.next().status, 413);
    EXPECT_TRUE(reader.closedByServer());
    EXPECT_TRUE(waitUntil([&] { return sawPrefix("aborted /upload"); }));
    EXPECT_FALSE(sawPrefix("complete /upload"));
  }
  // Exactly the limit is fine.
  BlockingClient client(address_);
  Reader reader(client.fd());
  const std::string limit = randomBytes(1024 * 1024, 6);
  ASSERT_TRUE(client.sendAll(chunkedPost("/upload") + chunked(limit)));
  EXPECT_EQ(reader.next().body, hashOf(limit) + " " + std::to_string(limit.size()));
}

TEST_P(HttpServerStreamedBodyTest, AnswerBeforeTheBodyEndClosesTheConnection) {
  startServer();
  for (const std::string path : {"/reject", "/early"}) {
    BlockingClient client(address_);
    Reader reader(client.fd());
    ASSERT_TRUE(client.sendAll(post(path, 1000000) + std::string(5000, 'x')));
    const Answer a = reader.next();
    EXPECT_EQ(a.status, path == "/reject" ? 403 : 200) << path;
    EXPECT_NE(a.head.find("Connection: close"), std::string::npos) << path;
    EXPECT_TRUE(reader.closedByServer()) << path;
    EXPECT_TRUE(waitUntil([&] { return sawPrefix("aborted " + path); })) << path;
  }
}

TEST_P(HttpServerStreamedBodyTest, ContinueOnlyOnceTheHandlerAsksForTheBody) {
  startServer();
  {
    BlockingClient client(address_);
    Reader reader(client.fd());
    ASSERT_TRUE(client.sendAll(post("/reject", 10, "Expect: 100-continue\r\n")));
    EXPECT_EQ(reader.next().status, 403);  // never a 100 first
  }
  BlockingClient client(address_);
  Reader reader(client.fd());
  ASSERT_TRUE(client.sendAll(post("/upload", 10, "Expect: 100-continue\r\n")));
  const Answer go = reader.next();
  EXPECT_EQ(go.head, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(client.sendAll("0123456789"));
  const Answer a = reader.next();
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, hashOf("0123456789") + " 10");
}

TEST_P(HttpServerStreamedBodyTest, SilentClientMidBodyIsIdleUnlessTheHandlerHoldsIt) {
  HttpServer::Options options;
  options.idleTimeout = std::chrono::milliseconds(300);
  startServer(options);
  BlockingClient paused(address_);
  ASSERT_TRUE(paused.sendAll(post("/pause", 20000) + std::string(1000, 'p')));
  ASSERT_TRUE(waitUntil([&] { return saw("paused"); }));
  BlockingClient silent(address_);
  ASSERT_TRUE(silent.sendAll(post("/slow", 20000) + std::string(1000, 's')));
  // The silent one is cut by the idle timeout...
  ASSERT_TRUE(waitUntil([&] { return sawPrefix("aborted /slow"); }));
  EXPECT_TRUE(Reader(silent.fd()).closedByServer());
  // ...the paused one, as old, waits on the server: it is still there.
  EXPECT_FALSE(sawPrefix("aborted /pause"));
  runSync(loop_, [&] { held_->resume(); });
  ASSERT_TRUE(paused.sendAll(std::string(19000, 'p')));
  const Answer a = Reader(paused.fd()).next();
  EXPECT_EQ(a.body, hashOf(std::string(20000, 'p')) + " 20000");
}

TEST_P(HttpServerStreamedBodyTest, RouterThatThrowsIs500AndAMissingHandlerToo) {
  startServer();
  BlockingClient client(address_);
  Reader reader(client.fd());
  ASSERT_TRUE(client.sendAll(post("/throw", 3) + "abc"));
  EXPECT_EQ(reader.next().status, 500);
  EXPECT_TRUE(reader.closedByServer());

  runSync(loop_, [&] { server_.reset(); });
  runSync(loop_, [&] {
    server_ = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "streamed");
    server_->setRouter([](const HttpRequest&) { return HttpServer::Route::kStreamedBody; });
    server_->setHandler([](const HttpRequest&, HttpResponse* r) { r->setBody("sync"); });
    server_->start();
  });
  address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  BlockingClient second(address_);
  Reader secondReader(second.fd());
  ASSERT_TRUE(second.sendAll("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(secondReader.next().status, 500);
}

INSTANTIATE_TEST_SUITE_P(Backends, HttpServerStreamedBodyTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::http
