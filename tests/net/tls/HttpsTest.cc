// HttpServer + StaticFiles behind the TLS layer, on every backend: static
// files (sent with TcpConnection::sendFile, which TLS must read and encrypt in
// order) pipelined with small answers on one connection, every byte of every
// response checked; and a pipelining client that never reads, which must not
// make the server open a file per request.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/TcpClient.h"
#include "net/http/HttpServer.h"
#include "net/http/StaticFiles.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"
#include "tests/net/TestUtil.h"
#include "tests/net/tls/TestPki.h"

namespace libnet::http {
namespace {

using namespace std::chrono_literals;
using test::randomBytes;
using test::runSync;
using test::waitUntil;

std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n"; }

// Splits a stream of HTTP/1.1 responses (each a 200 with a Content-Length)
// into their bodies as the stream grows, parsing each byte once. A malformed
// head stops it for good.
class ResponseSplitter {
 public:
  void feed(std::string_view bytes) {
    stream_ += bytes;
    while (!broken_) {
      const size_t end = stream_.find("\r\n\r\n", offset_);
      if (end == std::string::npos) return;
      std::string head = stream_.substr(offset_, end - offset_);
      for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const size_t at = head.find("\r\ncontent-length: ");
      if (head.rfind("http/1.1 200 ", 0) != 0 || at == std::string::npos) {
        broken_ = true;
        return;
      }
      const size_t length = std::stoul(head.substr(at + 18));
      if (stream_.size() < end + 4 + length) return;
      bodies_.push_back(stream_.substr(end + 4, length));
      offset_ = end + 4 + length;
    }
  }

  [[nodiscard]] const std::vector<std::string>& bodies() const { return bodies_; }
  [[nodiscard]] bool broken() const { return broken_; }
  // Where the complete responses end, and all that arrived.
  [[nodiscard]] size_t offset() const { return offset_; }
  [[nodiscard]] size_t size() const { return stream_.size(); }

 private:
  std::string stream_;
  size_t offset_ = 0;
  bool broken_ = false;
  std::vector<std::string> bodies_;
};

// What the client connection saw, written on the client loop's thread.
struct ClientSide {
  std::mutex mutex;
  std::string received;
  TcpConnectionPtr conn;

  std::string take() {
    std::lock_guard lock(mutex);
    return std::exchange(received, {});
  }
};

class HttpsTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    root_ = std::filesystem::temp_directory_path() /
            ("libnet-https-" + std::to_string(::getpid()) + "-" +
             std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(root_);
    writeFile("mid.bin", mid_);
    writeFile("big.bin", big_);
    writeFile("small.txt", small_);
    serverThread_ = std::make_unique<EventLoopThread>(nullptr, "https", GetParam());
    serverLoop_ = serverThread_->startLoop();
    clientThread_ = std::make_unique<EventLoopThread>(nullptr, "client", GetParam());
    clientLoop_ = clientThread_->startLoop();
  }

  void TearDown() override {
    if (clientLoop_) {
      runSync(clientLoop_, [&] {
        if (side_) {
          std::lock_guard lock(side_->mutex);
          side_->conn.reset();
        }
        client_.reset();
      });
    }
    if (serverLoop_) runSync(serverLoop_, [&] { server_.reset(); });
    clientThread_.reset();
    serverThread_.reset();
    if (!root_.empty()) std::filesystem::remove_all(root_);
  }

  void writeFile(const std::string& name, const std::string& contents) {
    std::ofstream(root_ / name, std::ios::binary) << contents;
  }

  void startServer(HttpServer::Options options = HttpServer::Options()) {
    tls::Context::ServerOptions serverTls;
    serverTls.certChainFile = pki_.serverCertFile();
    serverTls.keyFile = pki_.serverKeyFile();
    options.layer = tls::newLayer(tls::Context::newServer(serverTls));
    files_ = std::make_unique<StaticFiles>(root_.string());
    runSync(serverLoop_, [&] {
      server_ = std::make_unique<HttpServer>(serverLoop_, InetAddress(0, true), "https", options);
      server_->setHandler([this](const HttpRequest& request, HttpResponse* response) {
        ++handled_;
        if (request.path() == "/hello") {
          response->setStatus(200);
          response->setBody("hello world\n");
        } else {
          files_->serve(request, response);
        }
      });
      server_->start();
    });
    address_ = runSync(serverLoop_, [&] { return server_->listenAddress(); });
  }

  // A TLS client collecting the plaintext it receives; up once this returns.
  void connect() {
    tls::Context::ClientOptions options;
    options.caFile = pki_.caFile();
    auto layer = tls::newLayer(tls::Context::newClient(options), "127.0.0.1");
    side_ = std::make_shared<ClientSide>();
    runSync(clientLoop_, [&] {
      client_ = std::make_unique<TcpClient>(clientLoop_, address_, "https-client",
                                            TcpClient::Options{.layer = layer});
      client_->setConnectionCallback([side = side_](const TcpConnectionPtr& conn) {
        std::lock_guard lock(side->mutex);
        if (conn->connected()) side->conn = conn;
      });
      client_->setMessageCallback(
          [side = side_](const TcpConnectionPtr&, Buffer* buffer, Timestamp) {
            std::lock_guard lock(side->mutex);
            side->received += buffer->retrieveAllAsString();
          });
      client_->connect();
    });
    ASSERT_TRUE(waitUntil([&] {
      std::lock_guard lock(side_->mutex);
      return side_->conn != nullptr;
    }));
  }

  void send(const std::string& data) {
    runSync(clientLoop_, [&] {
      if (side_->conn) side_->conn->send(data);
    });
  }

  // Waits for `count` complete responses (or a malformed one).
  ResponseSplitter receive(size_t count, std::chrono::milliseconds timeout = test::kWait) {
    ResponseSplitter splitter;
    waitUntil(
        [&] {
          splitter.feed(side_->take());
          return splitter.broken() || splitter.bodies().size() >= count;
        },
        timeout);
    return splitter;
  }

  test::TestPki pki_;
  const std::string mid_ = randomBytes(100 * 1024, 31);       // over the inline limit: sendFile
  const std::string big_ = randomBytes(4 * 1024 * 1024, 32);  // many file chunks
  const std::string small_ = randomBytes(1024, 33);           // inlined into the answer
  std::filesystem::path root_;
  std::unique_ptr<StaticFiles> files_;
  std::unique_ptr<EventLoopThread> serverThread_;
  std::unique_ptr<EventLoopThread> clientThread_;
  EventLoop* serverLoop_ = nullptr;
  EventLoop* clientLoop_ = nullptr;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<TcpClient> client_;
  std::shared_ptr<ClientSide> side_;
  SocketAddress address_;
  std::atomic<int> handled_{0};
};

TEST_P(HttpsTest, PipelinedFilesAndSmallAnswersArriveWholeAndInOrder) {
  startServer();
  connect();
  const std::vector<std::pair<std::string, std::string>> plan = {
      {"/mid.bin", mid_},          {"/hello", "hello world\n"}, {"/big.bin", big_},
      {"/small.txt", small_},      {"/mid.bin", mid_},          {"/hello", "hello world\n"},
      {"/hello", "hello world\n"}, {"/big.bin", big_},          {"/small.txt", small_},
  };
  std::string batch;
  for (const auto& [path, body] : plan) batch += get(path);
  send(batch);  // one write: the server sees them pipelined
  const ResponseSplitter splitter = receive(plan.size(), 20s);
  ASSERT_FALSE(splitter.broken()) << "a malformed response head at byte " << splitter.offset();
  ASSERT_EQ(splitter.bodies().size(), plan.size())
      << splitter.size() << " bytes arrived, " << splitter.offset() << " of them in responses";
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_TRUE(splitter.bodies()[i] == plan[i].second)
        << "response " << i << " (" << plan[i].first << "): " << splitter.bodies()[i].size()
        << " bytes";
  }
  EXPECT_EQ(splitter.offset(), splitter.size()) << "bytes after the last response";
}

TEST_P(HttpsTest, APipeliningClientThatDoesNotReadIsHeldBack) {
  HttpServer::Options options;
  options.maxQueuedOutput = 256 * 1024;
  startServer(options);
  const int baseline = test::openFdCount();
  connect();
  runSync(clientLoop_, [&] { side_->conn->stopRead(); });
  constexpr int kRequests = 200;  // 20 MB of answers
  std::string batch;
  for (int i = 0; i < kRequests; ++i) batch += get("/mid.bin");
  send(batch);
  ASSERT_TRUE(waitUntil([&] { return handled_.load() > 0; }));
  // Unchecked, the server answers all of them at once, holding an open file
  // for each. Watch it for a while: it must stay bounded, and answer no
  // more than the limit allows until the client reads.
  int peak = 0;
  const auto until = std::chrono::steady_clock::now() + 500ms;
  while (std::chrono::steady_clock::now() < until) {
    peak = std::max(peak, test::openFdCount() - baseline);
    std::this_thread::yield();
  }
  // Two sockets, the files within the limit (100 KiB each) and one more.
  EXPECT_LE(peak, 2 + 4 + 2) << "files held open for unread answers";
  EXPECT_LT(handled_.load(), kRequests / 4);
  runSync(clientLoop_, [&] { side_->conn->startRead(); });
  const ResponseSplitter splitter = receive(kRequests, 60s);
  ASSERT_FALSE(splitter.broken()) << "a malformed response head at byte " << splitter.offset();
  ASSERT_EQ(splitter.bodies().size(), static_cast<size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) ASSERT_TRUE(splitter.bodies()[i] == mid_) << "answer " << i;
}

INSTANTIATE_TEST_SUITE_P(Backends, HttpsTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::http
