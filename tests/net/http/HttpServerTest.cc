// HttpServer + StaticFiles over real loopback sockets, on every backend:
// keep-alive, pipelining, files byte-exact, HEAD, every request limit, the
// framing rules (ambiguous lengths refused, bare LF accepted), path
// traversal, idle and slow clients, the header deadline of silent and
// trickling clients, and the server-wide budget for bodies being uploaded.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/UniqueFd.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/http/HttpServer.h"
#include "net/http/StaticFiles.h"
#include "tests/net/TestUtil.h"

namespace libnet::http {
namespace {

using test::BlockingClient;
using test::randomBytes;
using test::runSync;
using test::waitUntil;

struct Response {
  bool complete = false;  // status line, headers and the whole announced body arrived
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  [[nodiscard]] std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Reads responses off one client socket, keeping what arrives after one
// response for the next.
class ResponseReader {
 public:
  explicit ResponseReader(BlockingClient* client) : client_(client) {}

  // headOnly: the request was HEAD, so no body follows the headers.
  Response next(bool headOnly = false) {
    Response r;
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return r;
    }
    const std::string head = pending_.substr(0, end);
    pending_.erase(0, end + 4);
    size_t lineEnd = head.find("\r\n");
    const std::string statusLine = head.substr(0, lineEnd);
    if (statusLine.rfind("HTTP/1.1 ", 0) != 0 || statusLine.size() < 12) return r;
    r.status = std::stoi(statusLine.substr(9, 3));
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
    if (r.status == 100) {  // interim: the caller asks for the final one next
      r.complete = true;
      return r;
    }
    const std::string length = r.header("content-length");
    if (length.empty()) return r;  // every response must carry one
    const size_t n = headOnly ? 0 : std::stoul(length);
    while (pending_.size() < n) {
      if (!fill()) return r;
    }
    r.body = pending_.substr(0, n);
    pending_.erase(0, n);
    r.complete = true;
    return r;
  }

  // True if the server closed the connection (after whatever is pending).
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
      n = ::recv(client_->fd(), buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n == 0) eof_ = true;
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }

  BlockingClient* client_;
  std::string pending_;
  bool eof_ = false;
};

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

// Thrown by a handler: derives from nothing.
struct NotAnException {
  int code = 7;
};

// What /throw-<kind> throws: std::exception and three things that are not.
constexpr const char* kThrownKinds[] = {"std", "int", "string", "object"};

[[noreturn]] void throwKind(std::string_view kind) {
  if (kind == "int") throw 42;
  if (kind == "string") throw std::string("a thrown string");
  if (kind == "object") throw NotAnException{};
  throw std::runtime_error("handler failed");
}

class HttpServerTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    root_ = std::filesystem::temp_directory_path() /
            ("libnet-http-" + std::to_string(::getpid()) + "-" +
             std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(root_ / "www" / "sub");
    writeFile("www/small.txt", small_);
    writeFile("www/big.bin", big_);
    writeFile("www/sub/index.html", "<p>index</p>\n");
    writeFile("secret.txt", kSecret);  // beside the root, never served
    std::filesystem::create_symlink(root_ / "secret.txt", root_ / "www" / "link-out");
    std::filesystem::create_symlink("small.txt", root_ / "www" / "link-in");
    thread_ = std::make_unique<EventLoopThread>(nullptr, "http", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    if (server_) runSync(loop_, [&] { server_.reset(); });
    thread_.reset();
    if (!root_.empty()) std::filesystem::remove_all(root_);  // empty if skipped
  }

  void writeFile(const std::string& relative, const std::string& contents) {
    std::ofstream(root_ / relative, std::ios::binary) << contents;
  }

  // A server whose only clock is the header deadline (no idle timeout).
  void startServerWithHeaderTimeoutOnly(Duration headerTimeout) {
    HttpServer::Options options;
    options.idleTimeout = Duration::zero();
    options.headerTimeout = headerTimeout;
    startServer(options);
  }

  // `configure` (callbacks of the TcpServer underneath) runs on the loop
  // thread before start().
  void startServer(HttpServer::Options options = HttpServer::Options(), int threads = 0,
                   const std::function<void(HttpServer&)>& configure = {}) {
    files_ = std::make_unique<StaticFiles>((root_ / "www").string());
    options.threads = threads;
    runSync(loop_, [&] {
      server_ = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "test", options);
      if (configure) configure(*server_);
      server_->setHandler([this](const HttpRequest& request, HttpResponse* response) {
        if (request.path() == "/hello") {
          response->setStatus(200);
          response->setBody("hello world\n");
        } else if (request.path() == "/echo") {
          response->setStatus(200);
          response->setBody(request.body());
        } else if (request.path() == "/throw") {
          throw std::runtime_error("handler failed");
        } else if (request.path().starts_with("/throw-")) {
          throwKind(std::string_view(request.path()).substr(7));
        } else if (request.path() == "/peer") {
          keptRequest_ = request;  // a copy, asked again after its connection is gone
          const std::optional<SocketAddress> peer = request.peerAddress();
          response->setStatus(200);
          response->setBody(peer ? peer->toIpPort() : "none");
        } else if (request.path() == "/secret") {
          response->setStatus(200);
          response->setBody("SECRET-FOR-" + request.query());
        } else {
          files_->serve(request, response);
        }
      });
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  size_t connectionCount() {
    return runSync(loop_, [&] { return server_->tcpServer().connectionCount(); });
  }

  // Sends `request` on a fresh connection; expects one response with
  // `status` followed by the server closing the connection.
  void expectStatusAndClose(const std::string& request, int status) {
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(request));
    ResponseReader reader(&client);
    const Response r = reader.next();
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.status, status) << request.substr(0, 80);
    EXPECT_EQ(r.header("connection"), "close");
    EXPECT_TRUE(reader.closedByServer()) << "status " << status << " without a close";
  }

  static constexpr const char* kSecret = "top secret, outside the root\n";
  const std::string small_ = randomBytes(1024, 1);
  const std::string big_ = randomBytes(300 * 1024, 2);  // over the inline limit: sendfile
  std::filesystem::path root_;
  std::unique_ptr<StaticFiles> files_;
  HttpRequest keptRequest_;  // by /peer, on the loop thread
  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<HttpServer> server_;
  SocketAddress address_;
};

TEST_P(HttpServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  startServer();
  BlockingClient client(address_);
  ResponseReader reader(&client);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(client.sendAll(get("/hello")));
    const Response r = reader.next();
    ASSERT_TRUE(r.complete) << "request " << i;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "hello world\n");
    EXPECT_EQ(r.header("content-length"), "12");
    EXPECT_FALSE(r.header("date").empty());
    EXPECT_NE(r.header("connection"), "close");
  }
  EXPECT_EQ(connectionCount(), 1u);
}

TEST_P(HttpServerTest, HandlerLearnsThePeerAddressOfEachRequest) {
  startServer();
  BlockingClient client(address_);
  sockaddr_storage self{};
  socklen_t len = sizeof self;
  ASSERT_EQ(::getsockname(client.fd(), reinterpret_cast<sockaddr*>(&self), &len), 0);
  const std::string expected = SocketAddress::fromSockAddr(self, len).toIpPort();
  ResponseReader reader(&client);
  for (int i = 0; i < 2; ++i) {  // the parser's request is reused: still the same peer
    ASSERT_TRUE(client.sendAll(get("/peer")));
    const Response r = reader.next();
    ASSERT_TRUE(r.complete);
    EXPECT_EQ(r.body, expected);
  }
  client.close();
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
  // A copy kept past its connection does not dangle: it has no peer left.
  EXPECT_TRUE(waitUntil(
      [&] { return runSync(loop_, [&] { return !keptRequest_.peerAddress().has_value(); }); }));
}

TEST_P(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  startServer();
  BlockingClient client(address_);
  // One write, mixing inline answers, a sendfile body and a HEAD.
  const std::string batch = get("/hello") + get("/big.bin") + get("/small.txt") +
                            "HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\n" + get("/missing") +
                            get("/hello");
  ASSERT_TRUE(client.sendAll(batch));
  ResponseReader reader(&client);
  Response r = reader.next();
  EXPECT_EQ(r.body, "hello world\n");
  r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == big_) << "big.bin: " << r.body.size() << " bytes";
  r = reader.next();
  EXPECT_TRUE(r.body == small_);
  r = reader.next(/*headOnly=*/true);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.header("content-length"), std::to_string(big_.size()));
  r = reader.next();
  EXPECT_EQ(r.status, 404);
  r = reader.next();
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.body, "hello world\n");
}

TEST_P(HttpServerTest, ServesConnectionsSpreadOverIoThreads) {
  HttpServer::Options options;
  options.idleTimeout = std::chrono::seconds(30);
  startServer(options, 3);
  std::vector<std::thread> clients;
  std::atomic<int> good{0};
  for (int t = 0; t < 6; ++t) {
    clients.emplace_back([&] {
      BlockingClient client(address_);
      ResponseReader reader(&client);
      // Pipelined, with a sendfile body in the middle, on whichever loop.
      if (!client.sendAll(get("/hello") + get("/big.bin") + get("/small.txt"))) return;
      const bool ok = reader.next().body == "hello world\n" && reader.next().body == big_ &&
                      reader.next().body == small_;
      if (ok) ++good;
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(good.load(), 6);
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));  // clients closed
}

TEST_P(HttpServerTest, APipeliningClientThatDoesNotReadIsHeldBack) {
  HttpServer::Options options;
  options.maxQueuedOutput = 256 * 1024;
  startServer(options);
  const int baseline = test::openFdCount();
  BlockingClient client(address_, 64 * 1024);
  constexpr int kRequests = 100;  // 30 MB of answers
  std::string batch;
  for (int i = 0; i < kRequests; ++i) batch += get("/big.bin");
  ASSERT_TRUE(client.sendAll(batch));
  // Unchecked, the server would answer all 100 at once and hold an open file
  // (and its queue) for each. Watch it for a while: it must stay bounded.
  int peak = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < until) {
    peak = std::max(peak, test::openFdCount() - baseline);
    std::this_thread::yield();
  }
  EXPECT_LE(peak, 8) << "files held open for unread answers";
  ResponseReader reader(&client);
  for (int i = 0; i < kRequests; ++i) {
    const Response r = reader.next();
    ASSERT_TRUE(r.complete) << "answer " << i;
    ASSERT_TRUE(r.body == big_) << "answer " << i;
  }
}

// The server's back-pressure is the connection's own output limit: it never
// takes over a connection's write-complete callback, so one the application
// set through tcpServer() fires for HTTP responses, one per response written
// whole, and goes on firing while a pipelining client is held back and let go.
TEST_P(HttpServerTest, AWriteCompleteCallbackSetThroughTcpServerFiresForResponses) {
  auto completes = std::make_shared<std::atomic<int>>(0);
  HttpServer::Options options;
  options.maxQueuedOutput = 256 * 1024;
  startServer(options, 0, [completes](HttpServer& server) {
    server.tcpServer().setWriteCompleteCallback(
        [completes](const TcpConnectionPtr&) { completes->fetch_add(1); });
  });
  {
    BlockingClient client(address_);
    ResponseReader reader(&client);
    for (int i = 1; i <= 3; ++i) {
      ASSERT_TRUE(client.sendAll(get("/hello")));
      const Response r = reader.next();
      ASSERT_EQ(r.status, 200);
      // Written whole at once: its write-complete is queued right after.
      ASSERT_TRUE(waitUntil([&] { return completes->load() == i; }))
          << "after response " << i << ": " << completes->load() << " write-completes";
    }
  }
  // Pipelined in-memory answers well past the limit, sent before the
  // client reads any: the connection pauses reading, resumes once they
  // drain, and hands the rest of the requests back; its output drains to
  // empty at least once on the way, and the application hears of it.
  const int before = completes->load();
  BlockingClient client(address_, 64 * 1024);
  constexpr int kRequests = 1000;  // over 1 MB of answers (small.txt inline)
  std::string batch;
  for (int i = 0; i < kRequests; ++i) batch += get("/small.txt");
  ASSERT_TRUE(client.sendAll(batch));
  ResponseReader reader(&client);
  for (int i = 0; i < kRequests; ++i) {
    const Response r = reader.next();
    ASSERT_TRUE(r.complete) << "answer " << i;
    ASSERT_TRUE(r.body == small_) << "answer " << i;
  }
  EXPECT_TRUE(waitUntil([&] { return completes->load() > before; }))
      << "no write-complete for the pipelined answers";
  // And the callback is still the application's afterwards. The last
  // write-complete of the pipelined answers may still be queued on the loop
  // when the client has read them: two turns of the loop let it run (the
  // second one for io_uring, whose send completion may be reaped a turn
  // after the bytes arrived).
  runSync(loop_, [] {});
  runSync(loop_, [] {});
  const int afterPipelining = completes->load();
  ASSERT_TRUE(client.sendAll(get("/hello")));
  EXPECT_EQ(reader.next().status, 200);
  EXPECT_TRUE(waitUntil([&] { return completes->load() == afterPipelining + 1; }))
      << completes->load() << " write-completes, " << afterPipelining << " before";
}

TEST_P(HttpServerTest, BadOptionsAndLateHandlersThrow) {
  runSync(loop_, [&] {
    HttpServer::Options zeroDeadline;
    zeroDeadline.headerTimeout = Duration::zero();
    EXPECT_THROW(HttpServer(loop_, InetAddress(0, true), "bad", zeroDeadline),
                 std::invalid_argument);
    HttpServer::Options negativeThreads;
    negativeThreads.threads = -1;
    EXPECT_THROW(HttpServer(loop_, InetAddress(0, true), "bad", negativeThreads),
                 std::invalid_argument);
    HttpServer::Options budgetBelowBody;
    budgetBelowBody.limits.maxBodyBytes = 2 * 1024 * 1024;
    budgetBelowBody.maxBufferedBodyBytes = 1024 * 1024;
    EXPECT_THROW(HttpServer(loop_, InetAddress(0, true), "bad", budgetBelowBody),
                 std::invalid_argument);
    HttpServer::Options negativeIdle;
    negativeIdle.idleTimeout = -std::chrono::seconds(1);
    EXPECT_THROW(HttpServer(loop_, InetAddress(0, true), "bad", negativeIdle),
                 std::invalid_argument);
    HttpServer server(loop_, InetAddress(0, true), "late");
    server.start();
    EXPECT_THROW(server.setHandler([](const HttpRequest&, HttpResponse*) {}), std::logic_error);
    EXPECT_THROW(server.tcpServer().setWriteCompleteCallback(nullptr), std::logic_error);
  });
}

TEST_P(HttpServerTest, StaticFilesAreByteExactWithTheirType) {
  startServer();
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(client.sendAll(get("/small.txt")));
  Response r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == small_);
  EXPECT_EQ(r.header("content-type"), "text/plain; charset=utf-8");
  ASSERT_TRUE(client.sendAll(get("/big.bin")));
  r = reader.next();
  EXPECT_TRUE(r.body == big_);
  EXPECT_EQ(r.header("content-type"), "application/octet-stream");
  ASSERT_TRUE(client.sendAll(get("/sub/")));
  r = reader.next();
  EXPECT_EQ(r.body, "<p>index</p>\n");
  EXPECT_EQ(r.header("content-type"), "text/html; charset=utf-8");
  ASSERT_TRUE(client.sendAll(get("/link-in")));  // a symlink that stays inside
  r = reader.next();
  EXPECT_TRUE(r.body == small_);
}

TEST_P(HttpServerTest, HeadHasNoBodyButTheSameLength) {
  startServer();
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(client.sendAll("HEAD /small.txt HTTP/1.1\r\nHost: t\r\n\r\n" + get("/hello")));
  const Response head = reader.next(/*headOnly=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-length"), "1024");
  // Had the HEAD carried a body, it would show up here instead of /hello's answer.
  const Response next = reader.next();
  EXPECT_EQ(next.status, 200);
  EXPECT_EQ(next.body, "hello world\n");
}

TEST_P(HttpServerTest, EachLimitAnswersItsStatusAndCloses) {
  HttpServer::Options options;
  options.limits.maxBodyBytes = 1000;
  startServer(options);
  expectStatusAndClose("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n", 414);
  std::string manyFields = "GET /hello HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 120; ++i) manyFields += "X-F" + std::to_string(i) + ": v\r\n";
  expectStatusAndClose(manyFields + "\r\n", 431);
  expectStatusAndClose(
      "GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(70 * 1024, 'b') + "\r\n\r\n", 431);
  expectStatusAndClose("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n", 413);
  expectStatusAndClose(
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n" +
          std::string(2048, 'c') + "\r\n0\r\n\r\n",
      413);
  expectStatusAndClose("GET /hello HTTP/1.1\r\nHost t\r\n\r\n", 400);
  expectStatusAndClose("GET /hello HTTP/1.1\r\n\r\n", 400);  // 1.1 without Host
  expectStatusAndClose("BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n", 501);
  expectStatusAndClose("GET /hello HTTP/2.0\r\nHost: t\r\n\r\n", 505);
  expectStatusAndClose(
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
      "Transfer-Encoding: chunked\r\n\r\n",
      400);
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

TEST_P(HttpServerTest, TraversalNeverLeaksAFileOutsideTheRoot) {
  startServer();
  for (const std::string path :
       {"/../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt", "/sub/../../secret.txt",
        "/sub/%2e%2e/%2e%2e/secret.txt", "/..%2fsecret.txt", "/link-out", "/%2e%2e%2fsecret.txt"}) {
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get(path)));
    ResponseReader reader(&client);
    const Response r = reader.next();
    EXPECT_TRUE(r.complete) << path;
    EXPECT_EQ(r.status, 403) << path;
    EXPECT_EQ(r.body.find("top secret"), std::string::npos) << path;
  }
  expectStatusAndClose("GET ../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400);
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(get("/nothing-here")));
  ResponseReader reader(&client);
  EXPECT_EQ(reader.next().status, 404);
}

TEST_P(HttpServerTest, ChunkedBodyIsDecodedAndOtherMethodsOnFilesAre405) {
  startServer();
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(
      client.sendAll("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n"));
  Response r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello, world");
  ASSERT_TRUE(client.sendAll("DELETE /small.txt HTTP/1.1\r\nHost: t\r\n\r\n"));
  r = reader.next();
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.header("allow"), "GET, HEAD");
}

TEST_P(HttpServerTest, ExpectContinueGetsAnInterimResponse) {
  startServer();
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(
      client.sendAll("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
                     "Expect: 100-continue\r\n\r\n"));
  const Response interim = reader.next();
  EXPECT_EQ(interim.status, 100);
  ASSERT_TRUE(client.sendAll("body"));
  const Response r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "body");
}

// There is no "off" for the header deadline: zero or less is refused at
// construction, not turned into a deadline that every request misses.
TEST_P(HttpServerTest, AHeaderTimeoutOfZeroIsRefused) {
  for (const Duration timeout : {Duration::zero(), Duration(-1)}) {
    HttpServer::Options options;
    options.headerTimeout = timeout;
    runSync(loop_, [&] {
      EXPECT_THROW(HttpServer(loop_, InetAddress(0, true), "zero", options), std::invalid_argument);
    });
  }
}

TEST_P(HttpServerTest, AnUnknownExpectationIs417AndCloses) {
  startServer();
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(
      client.sendAll("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
                     "Expect: 200-ok\r\n\r\nbody"));
  EXPECT_EQ(reader.next().status, 417);
  EXPECT_TRUE(reader.closedByServer());
  // The server goes on.
  BlockingClient next(address_);
  ResponseReader nextReader(&next);
  ASSERT_TRUE(next.sendAll("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_EQ(nextReader.next().status, 200);
}

// Each request hides a second one that a peer framing the body differently
// (by the other header, by the other Content-Length, or with CR as a line
// end) would see: exactly one 400 comes back, then the close, and the hidden
// request is never answered.
TEST_P(HttpServerTest, AmbiguousFramingIsOne400AndNothingBehindItIsAnswered) {
  startServer();
  const std::string hidden = "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  for (const std::string& request : {
           "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: "
           "5\r\n\r\n0\r\n\r\n" +
               hidden,
           "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: "
           "chunked\r\n\r\n0\r\n\r\n" +
               hidden,
           "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0, 5\r\n\r\nhello" + hidden,
           "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: "
           "5\r\n\r\nhello" +
               hidden,
           "POST /echo HTTP/1.1\r\nHost: t\r\nX: y\rContent-Length: 5\r\n\r\nhello" + hidden,
       }) {
    SCOPED_TRACE(request);
    BlockingClient client(address_);
    ResponseReader reader(&client);
    ASSERT_TRUE(client.sendAll(request));
    const Response r = reader.next();
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.header("connection"), "close");
    EXPECT_TRUE(reader.closedByServer());
    EXPECT_EQ(reader.next().status, 0) << "a second response after the 400";
  }
}

// The framing that is accepted: a list of one length repeated, and bare LF
// line ends (RFC 9112 2.2), with keep-alive and the next request intact.
TEST_P(HttpServerTest, RepeatedIdenticalLengthsAndBareLineFeedsAreServed) {
  startServer();
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(client.sendAll(
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 5\r\nContent-Length: 5\r\n\r\nhello"
      "POST /echo HTTP/1.1\nHost: t\nContent-Length: 3\n\nabc"
      "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  Response r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello");
  r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "abc");
  r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_NE(r.header("connection"), "close");
}

TEST_P(HttpServerTest, ConnectionRulesOfHttp10And11) {
  startServer();
  {  // 1.0 without keep-alive: answered, then closed
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll("GET /hello HTTP/1.0\r\n\r\n"));
    ResponseReader reader(&client);
    EXPECT_EQ(reader.next().body, "hello world\n");
    EXPECT_TRUE(reader.closedByServer());
  }
  {  // 1.0 with keep-alive: stays open, says so
    BlockingClient client(address_);
    ResponseReader reader(&client);
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(client.sendAll("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
      const Response r = reader.next();
      EXPECT_EQ(r.body, "hello world\n");
      EXPECT_EQ(r.header("connection"), "keep-alive");
    }
  }
  // 1.1 asking to close: the answer says close, and the pipelined request
  // behind it is not answered.
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(get("/hello", "Connection: close\r\n") + get("/hello")));
  ResponseReader reader(&client);
  const Response r = reader.next();
  EXPECT_EQ(r.body, "hello world\n");
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_TRUE(reader.closedByServer());
}

TEST_P(HttpServerTest, AThrowingHandlerAnswers500AndCloses) {
  startServer();
  expectStatusAndClose(get("/throw"), 500);
}

// Client A pipelines a request for its secret and one whose handler throws
// (anything: std::exception, an int, a string, an object); it gets its
// secret, then 500 and the close. Clients B, on every I/O thread, then get
// their own answers and never a byte of A's. With 0 and 2 I/O threads.
TEST_P(HttpServerTest, AHandlerThrowingAnythingNeverLeaksAnswersToAnotherClient) {
  for (const int threads : {0, 2}) {
    for (const char* kind : kThrownKinds) {
      SCOPED_TRACE(std::string("threads=") + std::to_string(threads) + " thrown=" + kind);
      startServer(HttpServer::Options(), threads);
      {
        BlockingClient a(address_);
        ASSERT_TRUE(a.sendAll(get("/secret?alice") + get(std::string("/throw-") + kind)));
        ResponseReader reader(&a);
        Response r = reader.next();
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(r.body, "SECRET-FOR-alice");
        r = reader.next();
        EXPECT_TRUE(r.complete);
        EXPECT_EQ(r.status, 500);
        EXPECT_EQ(r.header("connection"), "close");
        EXPECT_TRUE(reader.closedByServer());
      }
      // Round robin: of any two connections in a row, one lands on A's loop.
      for (int i = 0; i < 4; ++i) {
        BlockingClient b(address_);
        ASSERT_TRUE(b.sendAll(get("/hello", "Connection: close\r\n")));
        bool eof = false;
        const std::string all = b.recvUntilEof(&eof);
        EXPECT_TRUE(eof);
        EXPECT_EQ(all.find("SECRET"), std::string::npos) << "client B " << i << " got: " << all;
        EXPECT_EQ(all.find("HTTP/1.1 200"), 0u) << all;
        EXPECT_EQ(all.find("HTTP/1.1", 1), std::string::npos) << "more than one answer: " << all;
        EXPECT_NE(all.find("hello world\n"), std::string::npos);
      }
      runSync(loop_, [&] { server_.reset(); });
    }
  }
}

TEST_P(HttpServerTest, IdleKeepAliveConnectionIsClosed) {
  HttpServer::Options options;
  options.idleTimeout = std::chrono::milliseconds(300);
  startServer(options);
  BlockingClient client(address_);  // recv times out after 5 s: a missing kick fails
  ASSERT_TRUE(client.sendAll(get("/hello")));
  ResponseReader reader(&client);
  EXPECT_EQ(reader.next().status, 200);
  EXPECT_TRUE(reader.closedByServer());
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

TEST_P(HttpServerTest, SlowHeadersAreAnswered408) {
  HttpServer::Options options;
  options.headerTimeout = std::chrono::milliseconds(200);
  startServer(options);
  BlockingClient client(address_);
  const std::string request = get("/hello", "X-Slow: " + std::string(200, 's') + "\r\n");
  // A slowloris client: one byte every 20 ms, far slower than the deadline
  // allows. The pacing is the behaviour under test, not synchronisation.
  bool refused = false;
  for (size_t i = 0; i < request.size() && !refused; ++i) {
    if (!client.sendAll(request.substr(i, 1))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pollfd pfd{client.fd(), POLLIN, 0};
    refused = ::poll(&pfd, 1, 0) == 1;
  }
  ASSERT_TRUE(refused) << "the whole request went through at a slowloris pace";
  ResponseReader reader(&client);
  EXPECT_EQ(reader.next().status, 408);
  EXPECT_TRUE(reader.closedByServer());
}

// True if `fd` turns readable (data or end of file) within `timeout`.
bool readableWithin(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd{fd, POLLIN, 0};
    const int n = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

std::string postHead(size_t contentLength, bool expectContinue) {
  return "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(contentLength) +
         "\r\n" + (expectContinue ? "Expect: 100-continue\r\n" : "") + "\r\n";
}

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + std::string(data) + "\r\n";
}

// The start of a request, then silence: the header deadline alone must end
// it, with no idle timeout to fall back on.
void expect408AtTheDeadline(const SocketAddress& server, const std::string& partial,
                            std::chrono::milliseconds headerTimeout) {
  BlockingClient client(server);  // recv gives up after 5 s: a missing 408 fails
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client.sendAll(partial));
  ResponseReader reader(&client);
  const Response r = reader.next();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.complete) << "no answer to " << testing::PrintToString(partial);
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(r.header("connection"), "close");
  EXPECT_GE(elapsed, headerTimeout);
  EXPECT_LT(elapsed, headerTimeout + std::chrono::seconds(3));
  EXPECT_TRUE(reader.closedByServer());
}

TEST_P(HttpServerTest, ASilentPartialRequestLineIsAnswered408AtTheDeadline) {
  startServerWithHeaderTimeoutOnly(std::chrono::milliseconds(250));
  expect408AtTheDeadline(address_, "GET /hel", std::chrono::milliseconds(250));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

TEST_P(HttpServerTest, SilentPartialHeadersAreAnswered408AtTheDeadline) {
  startServerWithHeaderTimeoutOnly(std::chrono::milliseconds(250));
  expect408AtTheDeadline(address_, "GET /hello HTTP/1.1\r\nHost: t\r\nX-Half: val",
                         std::chrono::milliseconds(250));
  expect408AtTheDeadline(address_, "GET /hello HTTP/1.1\r\nHost: t\r\n",
                         std::chrono::milliseconds(250));
  EXPECT_TRUE(waitUntil([&] { return connectionCount() == 0; }));
}

TEST_P(HttpServerTest, ARequestCompletedAfterAPartialReadIsNotTimedOutLater) {
  startServerWithHeaderTimeoutOnly(std::chrono::milliseconds(300));
  BlockingClient client(address_);
  ResponseReader reader(&client);
  // One write: a whole request and the start of the next. The answer to the
  // first shows that the server has read both, so the second's deadline is
  // armed by the time the rest of it goes out.
  ASSERT_TRUE(client.sendAll(get("/hello") + "GET /hello HTTP/1.1\r\nHo"));
  Response r = reader.next();
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 200);
  ASSERT_TRUE(client.sendAll("st: t\r\n\r\n"));
  r = reader.next();
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world\n");
  // Well past the second request's deadline: neither a 408 nor a close.
  EXPECT_FALSE(readableWithin(client.fd(), std::chrono::milliseconds(900)))
      << "the deadline of an answered request fired";
  ASSERT_TRUE(client.sendAll(get("/hello")));
  r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hello world\n");
}

TEST_P(HttpServerTest, StrayBlankLinesAfterARequestDoNotStartTheHeaderDeadline) {
  startServerWithHeaderTimeoutOnly(std::chrono::milliseconds(300));
  BlockingClient client(address_);
  ResponseReader reader(&client);
  // Some clients end a body with an extra CRLF (RFC 9112 2.2), then idle.
  ASSERT_TRUE(client.sendAll(postHead(3, false) + "abc\r\n"));
  Response r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "abc");
  EXPECT_FALSE(readableWithin(client.fd(), std::chrono::milliseconds(900)))
      << "a keep-alive connection was timed out for a blank line";
  ASSERT_TRUE(client.sendAll(get("/hello")));
  r = reader.next();
  EXPECT_EQ(r.status, 200);
}

TEST_P(HttpServerTest, ATricklingClientGets408AtTheDeadlineNotAtItsNextByte) {
  // A byte every 800 ms, a deadline at 1 s: without a timer the 408 would
  // wait for the byte at 1.6 s. The pacing is the behaviour under test.
  constexpr auto kTimeout = std::chrono::milliseconds(1000);
  constexpr auto kInterval = std::chrono::milliseconds(800);
  startServerWithHeaderTimeoutOnly(kTimeout);
  BlockingClient client(address_);
  const std::string request = get("/hello", "X-Slow: " + std::string(100, 's') + "\r\n");
  const auto start = std::chrono::steady_clock::now();
  size_t sent = 0;
  bool answered = false;
  while (sent < 6 && !answered) {
    ASSERT_TRUE(client.sendAll(request.substr(sent, 1)));
    ++sent;
    const auto next = start + static_cast<int>(sent) * kInterval;
    answered = readableWithin(client.fd(), std::chrono::duration_cast<std::chrono::milliseconds>(
                                               next - std::chrono::steady_clock::now()));
  }
  ASSERT_TRUE(answered) << "no answer to a trickling client";
  EXPECT_EQ(sent, 2u) << "answered after byte " << sent << " (bytes at 0, 0.8, 1.6 s...)";
  ResponseReader reader(&client);
  const Response r = reader.next();
  EXPECT_EQ(r.status, 408);
  EXPECT_TRUE(reader.closedByServer());
}

TEST_P(HttpServerTest, BodiesBeyondTheBudgetAre503AndTheBudgetComesBack) {
  constexpr size_t kMiB = 1024 * 1024;
  constexpr size_t kPart = 300 * 1024;
  HttpServer::Options options;
  options.limits.maxBodyBytes = kMiB;
  options.maxBufferedBodyBytes = 4 * kMiB;
  startServer(options, 2);  // two loops share the budget
  std::vector<std::string> bodies;
  std::vector<std::unique_ptr<BlockingClient>> uploads;
  std::vector<std::unique_ptr<ResponseReader>> readers;
  for (uint32_t i = 0; i < 4; ++i) {
    bodies.push_back(randomBytes(kMiB, 10 + i));
    uploads.push_back(std::make_unique<BlockingClient>(address_));
    readers.push_back(std::make_unique<ResponseReader>(uploads.back().get()));
    // "100 Continue" comes once the body has its room: the order is known.
    ASSERT_TRUE(uploads[i]->sendAll(postHead(kMiB, true)));
    ASSERT_EQ(readers[i]->next().status, 100) << "upload " << i;
    ASSERT_TRUE(uploads[i]->sendAll(std::string_view(bodies[i]).substr(0, kPart)));
  }
  EXPECT_EQ(server_->bufferedBodyBytes(), 4 * kMiB);
  {  // the attack: a body announced, partly sent, no Expect
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(postHead(kMiB, false) + randomBytes(kPart, 20)));
    ResponseReader reader(&client);
    const Response r = reader.next();
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.header("connection"), "close");
    EXPECT_TRUE(reader.closedByServer());
  }
  {  // a client that asks first is refused before it sends its body
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(postHead(kMiB, true)));
    ResponseReader reader(&client);
    EXPECT_EQ(reader.next().status, 503);
    EXPECT_TRUE(reader.closedByServer());
  }
  EXPECT_EQ(server_->bufferedBodyBytes(), 4 * kMiB);  // the refused took nothing

  // One upload finishes: its bytes arrive whole at the handler, and its room
  // is free again for a new upload, which succeeds.
  ASSERT_TRUE(uploads[0]->sendAll(std::string_view(bodies[0]).substr(kPart)));
  Response r = readers[0]->next();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == bodies[0]) << "echoed " << r.body.size() << " bytes";
  EXPECT_TRUE(waitUntil([&] { return server_->bufferedBodyBytes() == 3 * kMiB; }));
  {
    const std::string body = randomBytes(kMiB, 30);
    BlockingClient client(address_);
    ResponseReader reader(&client);
    ASSERT_TRUE(client.sendAll(postHead(kMiB, true)));
    ASSERT_EQ(reader.next().status, 100);
    ASSERT_TRUE(client.sendAll(body));
    r = reader.next();
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.body == body) << "echoed " << r.body.size() << " bytes";
  }

  // One upload is abandoned: closing gives its room back too.
  uploads[1]->close();
  EXPECT_TRUE(waitUntil([&] { return server_->bufferedBodyBytes() == 2 * kMiB; }));
  {
    BlockingClient client(address_);
    ResponseReader reader(&client);
    ASSERT_TRUE(client.sendAll(postHead(kMiB, true)));
    EXPECT_EQ(reader.next().status, 100);
  }  // and abandoned at once

  for (size_t i = 2; i < 4; ++i) {
    ASSERT_TRUE(uploads[i]->sendAll(std::string_view(bodies[i]).substr(kPart)));
    r = readers[i]->next();
    EXPECT_EQ(r.status, 200) << "upload " << i;
    EXPECT_TRUE(r.body == bodies[i]) << "upload " << i << " echoed " << r.body.size();
  }
  EXPECT_TRUE(waitUntil([&] { return server_->bufferedBodyBytes() == 0; }));
}

TEST_P(HttpServerTest, AChunkedBodyBeyondTheBudgetIs503) {
  constexpr size_t kKiB = 1024;
  HttpServer::Options options;
  options.limits.maxBodyBytes = 1024 * kKiB;
  options.maxBufferedBodyBytes = 1024 * kKiB;
  startServer(options);
  // Half the budget held by an upload in progress.
  const std::string held = randomBytes(512 * kKiB, 40);
  BlockingClient holder(address_);
  ResponseReader holderReader(&holder);
  ASSERT_TRUE(holder.sendAll(postHead(held.size(), true)));
  ASSERT_EQ(holderReader.next().status, 100);
  ASSERT_TRUE(holder.sendAll(std::string_view(held).substr(0, 100 * kKiB)));
  EXPECT_EQ(server_->bufferedBodyBytes(), 512 * kKiB);

  // 768 KiB in three chunks: counted as they come, refused once past the rest.
  const std::string chunkedHead =
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::vector<std::string> pieces;
  for (uint32_t i = 0; i < 3; ++i) pieces.push_back(randomBytes(256 * kKiB, 50 + i));
  {
    BlockingClient client(address_);
    ResponseReader reader(&client);
    ASSERT_TRUE(client.sendAll(chunkedHead));
    for (const std::string& piece : pieces) ASSERT_TRUE(client.sendAll(chunk(piece)));
    const Response r = reader.next();
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.status, 503);
    EXPECT_EQ(r.header("connection"), "close");
    EXPECT_TRUE(reader.closedByServer());
  }
  EXPECT_TRUE(waitUntil([&] { return server_->bufferedBodyBytes() == 512 * kKiB; }));

  ASSERT_TRUE(holder.sendAll(std::string_view(held).substr(100 * kKiB)));
  Response r = holderReader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == held);
  EXPECT_TRUE(waitUntil([&] { return server_->bufferedBodyBytes() == 0; }));

  // With the room back the same chunked upload goes through, byte for byte.
  BlockingClient client(address_);
  ResponseReader reader(&client);
  ASSERT_TRUE(client.sendAll(chunkedHead));
  for (const std::string& piece : pieces) ASSERT_TRUE(client.sendAll(chunk(piece)));
  ASSERT_TRUE(client.sendAll("0\r\n\r\n"));
  r = reader.next();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == pieces[0] + pieces[1] + pieces[2]) << "echoed " << r.body.size();
  EXPECT_TRUE(waitUntil([&] { return server_->bufferedBodyBytes() == 0; }));
}

// Connects to `address` as fast as it can until destroyed
// (test::ConnectStorm), and with each connection does one of: leave a
// request unfinished (its line and part of its headers, or its headers and
// part of its body) on a connection kept open for a while; send a full
// pipelined batch and close without reading the answers; send part of a
// request and reset. The answers are never read.
std::unique_ptr<test::ConnectStorm> httpRequestStorm(const SocketAddress& address) {
  constexpr size_t kKeptOpen = 16;  // unfinished requests held at once
  const std::string pipelined = get("/a") + get("/b") +
                                "POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello" +
                                get("/d");
  // A ring of connections with unfinished requests, on the storm's thread.
  auto kept = std::make_shared<std::vector<UniqueFd>>(kKeptOpen);
  return std::make_unique<test::ConnectStorm>(address, [pipelined, kept](int i, UniqueFd fd) {
    using test::ConnectStorm;
    switch (i % 4) {
      case 0:  // headers unfinished: arms the header deadline
        ConnectStorm::sendIgnoringErrors(fd, "GET /partial HTTP/1.1\r\nHost: t\r\nX-Pad: ");
        (*kept)[static_cast<size_t>(i / 4 * 2 + i % 4) % kKeptOpen] =
            std::move(fd);  // closes the oldest
        break;
      case 1:  // body unfinished: holds part of the body budget
        ConnectStorm::sendIgnoringErrors(
            fd, "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 4096\r\n\r\nabc");
        (*kept)[static_cast<size_t>(i / 4 * 2 + i % 4) % kKeptOpen] = std::move(fd);
        break;
      case 2:  // a whole batch, answers never read
        ConnectStorm::sendIgnoringErrors(fd, pipelined);
        break;
      default:  // part of a request, then a reset
        ConnectStorm::sendIgnoringErrors(fd, "GET /reset HTTP/1.1\r\n");
        ConnectStorm::resetOnClose(fd);
        break;
    }
  });
}

// Set when the storm test's handler (the last copy of its state) has been
// destroyed, and counted when it is called after that. Globals, so that the
// handler reads them without going through its own (maybe freed) captures.
std::atomic<bool> g_stormHandlerGone{false};
std::atomic<int> g_stormCallsAfterHandlerGone{0};

struct StormHandlerLife {
  StormHandlerLife() = default;
  StormHandlerLife(const StormHandlerLife&) = delete;
  StormHandlerLife& operator=(const StormHandlerLife&) = delete;
  ~StormHandlerLife() { g_stormHandlerGone.store(true); }
};

// An HttpServer with two I/O loops that accept on sockets of their own is
// destroyed 20 times in a row while a storm of connections sends it
// unfinished, pipelined and reset requests: its destructor must not let an
// I/O loop run a callback on a server whose handler or options are gone
// (the handler's state lives in the handler only, so a call after it was
// destroyed is a use after free for ASan, and counted either way), and every
// fd of every round must be closed in the end. A short header deadline and a
// tiny output cap keep the header timers and the connections' pausing and
// resuming busy while it happens.
TEST_P(HttpServerTest, DestroyingAServerWithIoThreadsDuringARequestStormUsesNothingFreed) {
  constexpr int kRounds = 20;
  const int baseline = test::openFdCount();
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    g_stormHandlerGone.store(false);
    g_stormCallsAfterHandlerGone.store(0);
    auto answered = std::make_shared<std::atomic<int>>(0);
    std::unique_ptr<HttpServer> server;
    const SocketAddress address = runSync(loop_, [&] {
      HttpServer::Options options;
      options.headerTimeout = std::chrono::milliseconds(20);
      // A few answers pause a connection. Not 1: the connection's limit also
      // bounds what an io_uring receive may take (the room left under it),
      // and a room of a byte or two turns every request into many reads.
      options.maxQueuedOutput = 1024;
      options.threads = 2;
      server = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "storm", options);
      server->setHandler([life = std::make_shared<StormHandlerLife>(), tag = std::string(256, 'x'),
                          answered](const HttpRequest&, HttpResponse* response) {
        if (g_stormHandlerGone.load()) g_stormCallsAfterHandlerGone.fetch_add(1);
        response->setStatus(200);
        response->setBody(tag);
        answered->fetch_add(1);
      });
      server->start();
      return server->listenAddress();
    });
    {
      const auto storm = httpRequestStorm(address);
      // Mid-storm: requests are being answered on both loops.
      ASSERT_TRUE(waitUntil([&] { return answered->load() >= 20; }))
          << "only " << answered->load() << " requests answered";
      runSync(loop_, [&] { server.reset(); });
    }
    EXPECT_TRUE(g_stormHandlerGone.load());
    EXPECT_EQ(g_stormCallsAfterHandlerGone.load(), 0) << "the handler ran after it was destroyed";
  }
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == baseline; }))
      << test::openFdCount() << " fds open, " << baseline << " before";
}

INSTANTIATE_TEST_SUITE_P(Backends, HttpServerTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::http
