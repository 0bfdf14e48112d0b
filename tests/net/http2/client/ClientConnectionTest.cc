// http2::ClientConnection against libnet's own HTTP/2 server (HttpServer +
// http2::serve on another loop thread), h2c and TLS with ALPN, on every
// backend: GET, POST with a whole body and a 64 MiB body written in pieces
// under back-pressure, a consumer that pauses (the server's DATA held by the
// stream window), 150 streams over a limit of 100, keepalive PINGs, ALPN
// refused, and a stream submitted after the close.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <memory>
#include <string>
#include <vector>

#include "net/InetAddress.h"
#include "net/http/HttpServer.h"
#include "net/http/RequestBody.h"
#include "net/http/ResponseWriter.h"
#include "net/http2/Http2Server.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"
#include "tests/net/http2/client/ClientTestSupport.h"
#include "tests/net/tls/TestPki.h"

namespace libnet::http2::test {
namespace {

using libnet::test::runSync;
using libnet::test::waitUntil;

constexpr size_t kMiB = 1024 * 1024;

// FNV-1a over the bytes, as both ends count an upload.
struct Fnv {
  uint64_t bytes = 0;
  uint64_t hash = 14695981039346656037ULL;
  void add(std::string_view piece) {
    bytes += piece.size();
    for (const char c : piece) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ULL;
    }
  }
  [[nodiscard]] std::string text() const {
    return "bytes=" + std::to_string(bytes) + " fnv=" + std::to_string(hash);
  }
};

// Bytes that differ from one offset to the next (period 251), cut from one
// string made once: copied and compared whole, not byte by byte, which a
// ThreadSanitizer build would make slow over 64 MiB.
std::string_view pattern(size_t offset, size_t n) {
  static const std::string periodic = [] {
    std::string out(251 + 4 * kMiB, '\0');
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i % 251);
    return out;
  }();
  return std::string_view(periodic).substr(offset % 251, n);
}

// A body checked piece by piece against pattern() as it arrives.
struct PatternCheck {
  uint64_t bytes = 0;
  uint64_t mismatched = 0;
  void add(std::string_view piece) {
    if (piece != pattern(bytes, piece.size())) ++mismatched;
    bytes += piece.size();
  }
  [[nodiscard]] std::string text() const {
    return "bytes=" + std::to_string(bytes) + " mismatched=" + std::to_string(mismatched);
  }
};

void answer(const http::ResponseWriterPtr& writer, std::string body) {
  http::HttpResponse response(false);
  response.setStatus(200);
  response.setBody(std::move(body));
  writer->respond(std::move(response));
}

// A streamed request body taken by `Digest`, answered with its text.
template <class Digest>
void consume(const http::ResponseWriterPtr& writer) {
  const http::RequestBodyPtr body = writer->requestBody();
  auto digest = std::make_shared<Digest>();
  body->setEndCallback([writer, digest](http::RequestBody::End end) {
    if (end == http::RequestBody::End::kAborted) {
      writer->abort();
      return;
    }
    answer(writer, digest->text());
  });
  body->setDataCallback([digest](std::string_view piece) { digest->add(piece); });
}

class ClientConnectionTest : public ClientFixture {
 protected:
  // `alpn`: what a TLS server offers; empty: h2c.
  void startServer(std::vector<std::string> alpn = {}) {
    runSync(serverLoop_, [&] {
      http::HttpServer::Options options;
      if (!alpn.empty()) {
        tls::Context::ServerOptions serverTls;
        serverTls.certChainFile = pki_.serverCertFile();
        serverTls.keyFile = pki_.serverKeyFile();
        serverTls.alpn = alpn;
        options.layer = tls::newLayer(tls::Context::newServer(serverTls));
      }
      server_ =
          std::make_unique<http::HttpServer>(serverLoop_, InetAddress(0, true), "h2", options);
      server_->setRouter([](const http::HttpRequest& head) {
        return head.path() == "/upload" || head.path() == "/pattern"
                   ? http::HttpServer::Route::kStreamedBody
                   : http::HttpServer::Route::kHandler;
      });
      server_->setHandler([](const http::HttpRequest& request, http::HttpResponse* response) {
        if (request.path() == "/big") {
          response->setBody(std::string(pattern(0, 4 * kMiB)));
        } else if (request.path() == "/echo") {
          Fnv fnv;
          fnv.add(request.body());
          response->setBody(fnv.text());
        } else {
          response->setBody("hello " + std::string(request.path()));
        }
      });
      server_->setAsyncHandler(
          [](const http::HttpRequest& request, http::ResponseWriterPtr writer) {
            if (request.path() == "/pattern") {
              consume<PatternCheck>(writer);
            } else {
              consume<Fnv>(writer);
            }
          });
      service_ = serve(*server_, {});
      server_->start();
    });
    address_ = runSync(serverLoop_, [&] { return server_->listenAddress(); });
  }

  void stopServer() override {
    if (server_) runSync(serverLoop_, [&] { server_.reset(); });
  }

  ClientConnection::Options tlsOptions() {
    tls::Context::ClientOptions clientTls;
    clientTls.caFile = pki_.caFile();
    clientTls.alpn = {"h2"};
    ClientConnection::Options options;
    options.layer = tls::newLayer(tls::Context::newClient(clientTls), "127.0.0.1");
    return options;
  }

  void getHello() {
    auto o = std::make_shared<Outcome>();
    submit(request("GET", "/hi"), {}, true, o);
    ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
    std::lock_guard<std::mutex> lock(o->mu);
    EXPECT_EQ(o->status, 200);
    EXPECT_EQ(o->body, "hello /hi");
    EXPECT_EQ(o->close->errorCode, 0u);
    EXPECT_FALSE(o->close->connectionLost);
    EXPECT_EQ(o->closes, 1);
  }

  libnet::test::TestPki pki_;
  std::unique_ptr<http::HttpServer> server_;
  std::shared_ptr<Service> service_;
  SocketAddress address_;
};

TEST_P(ClientConnectionTest, GetOverH2c) {
  startServer();
  connect(address_);
  getHello();
  EXPECT_TRUE(waitState(State::kConnected));
}

TEST_P(ClientConnectionTest, GetOverTlsWithAlpnH2) {
  startServer({"h2", "http/1.1"});
  connect(address_, tlsOptions());
  getHello();
  EXPECT_TRUE(waitState(State::kConnected));
}

TEST_P(ClientConnectionTest, ServerWithoutH2IsRefused) {
  startServer({"http/1.1"});
  connect(address_, tlsOptions());
  auto o = std::make_shared<Outcome>();
  submit(request("GET", "/hi"), {}, true, o);
  ASSERT_TRUE(waitState(State::kClosed));
  EXPECT_NE(closeReason().find("did not choose h2"), std::string::npos) << closeReason();
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  EXPECT_TRUE(o->closeValue().refused);  // never sent: safe to retry elsewhere
}

TEST_P(ClientConnectionTest, PostWholeBody) {
  startServer();
  connect(address_);
  const std::string body(pattern(7, 300 * 1000));
  Fnv expected;
  expected.add(body);
  auto o = std::make_shared<Outcome>();
  submit(request("POST", "/echo"), body, true, o);
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  std::lock_guard<std::mutex> lock(o->mu);
  EXPECT_EQ(o->status, 200);
  EXPECT_EQ(o->body, expected.text());
}

// 64 MiB written in pieces while the stream queues under 1 MiB: the
// writer waits for onWritable; the server takes it in pieces too.
TEST_P(ClientConnectionTest, PostStreamedBodyUnderBackPressure) {
  startServer({"h2"});
  connect(address_, tlsOptions());
  constexpr size_t kTotal = 64 * kMiB;
  constexpr size_t kChunk = 256 * 1024;
  constexpr size_t kHigh = kMiB;
  struct Upload {
    size_t sent = 0;
    size_t maxQueued = 0;
    PatternCheck sentCheck;
    ClientConnection::StreamKey key = 0;
  };
  auto up = std::make_shared<Upload>();
  auto o = std::make_shared<Outcome>();
  // Runs on the client loop: writes while the queue is under kHigh.
  std::shared_ptr<std::function<void()>> pump = std::make_shared<std::function<void()>>();
  *pump = [this, up] {
    while (up->sent < kTotal && conn_->queuedBytes(up->key) < kHigh) {
      const std::string_view piece = pattern(up->sent, kChunk);
      up->sentCheck.add(piece);
      up->sent += piece.size();
      conn_->write(up->key, std::string(piece));
      up->maxQueued = std::max(up->maxQueued, conn_->queuedBytes(up->key));
      if (up->sent == kTotal) conn_->endStream(up->key);
    }
  };
  runSync(clientLoop_, [&] {
    ClientSession::StreamCallbacks cb = record(o);
    cb.onWritable = [pump] { (*pump)(); };
    up->key = conn_->submit(request("POST", "/pattern"), {}, false, std::move(cb));
    (*pump)();
  });
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }, std::chrono::seconds(120)));
  const std::string expected = runSync(clientLoop_, [&] { return up->sentCheck.text(); });
  std::lock_guard<std::mutex> lock(o->mu);
  EXPECT_EQ(o->status, 200);
  EXPECT_EQ(o->body, expected);
  EXPECT_EQ(o->body, "bytes=" + std::to_string(kTotal) + " mismatched=0");
  EXPECT_EQ(o->close->errorCode, 0u);
  EXPECT_LE(up->maxQueued, kHigh + kChunk);
}

// The consumer pauses at the head: the server may send one stream window and
// no more (a PING's ACK, which follows any DATA sent before it, shows that
// nothing else came); resumed, the whole body arrives.
TEST_P(ClientConnectionTest, PausedConsumerHoldsOneWindow) {
  startServer();
  ClientConnection::Options options;
  options.session.streamWindow = 64 * 1024;
  connect(address_, options);
  auto o = std::make_shared<Outcome>();
  ClientConnection::StreamKey key = 0;
  o->onHead = [this, &key] { conn_->pause(key); };
  runSync(clientLoop_, [&] { key = conn_->submit(request("GET", "/big"), {}, true, record(o)); });
  const auto held = [&] { return runSync(clientLoop_, [&] { return conn_->heldBytes(key); }); };
  ASSERT_TRUE(waitUntil([&] { return held() >= 64 * 1024; }));
  const int acks = pingAcks();
  runSync(clientLoop_, [&] { conn_->ping(); });
  ASSERT_TRUE(waitUntil([&] { return pingAcks() > acks; }));
  EXPECT_EQ(held(), 64u * 1024);
  {
    std::lock_guard<std::mutex> lock(o->mu);
    EXPECT_EQ(o->bytes, 0u);
  }
  runSync(clientLoop_, [&] { conn_->resume(key); });
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  std::lock_guard<std::mutex> lock(o->mu);
  EXPECT_EQ(o->body, pattern(0, 4 * kMiB));
  EXPECT_EQ(o->close->errorCode, 0u);
}

// More streams than the server's SETTINGS_MAX_CONCURRENT_STREAMS (100): the
// rest wait for a slot, and every one completes.
TEST_P(ClientConnectionTest, ManyConcurrentStreams) {
  startServer();
  connect(address_);
  std::vector<std::shared_ptr<Outcome>> outcomes;
  runSync(clientLoop_, [&] {
    for (int i = 0; i < 150; ++i) {
      outcomes.push_back(std::make_shared<Outcome>());
      conn_->submit(request("GET", "/s" + std::to_string(i)), {}, true, record(outcomes.back()));
    }
  });
  for (size_t i = 0; i < outcomes.size(); ++i) {
    ASSERT_TRUE(waitUntil([&] { return outcomes[i]->closed(); })) << i;
    std::lock_guard<std::mutex> lock(outcomes[i]->mu);
    EXPECT_EQ(outcomes[i]->body, "hello /s" + std::to_string(i));
    EXPECT_EQ(outcomes[i]->closes, 1);
  }
  EXPECT_EQ(runSync(clientLoop_, [&] { return conn_->state(); }), State::kConnected);
}

// Keepalive: PINGs go out while nothing comes, and their ACKs keep the
// connection open.
TEST_P(ClientConnectionTest, KeepalivePingsAreAcknowledged) {
  startServer();
  ClientConnection::Options options;
  options.keepaliveInterval = std::chrono::milliseconds(20);
  options.keepaliveTimeout = std::chrono::seconds(10);
  connect(address_, options);
  ASSERT_TRUE(waitState(State::kConnected));
  ASSERT_TRUE(waitUntil([&] { return pingAcks() >= 3; }));
  EXPECT_EQ(closedCount(), 0);
  getHello();
}

// Stream calls from a thread that is not the loop's reach the loop in the
// order they were made: the body arrives whole and in order.
TEST_P(ClientConnectionTest, CallsFromAnotherThreadKeepTheirOrder) {
  startServer();
  connect(address_);
  auto o = std::make_shared<Outcome>();
  const ClientConnection::StreamKey key =
      conn_->submit(request("POST", "/upload"), "first;", false, record(o));
  Fnv expected;
  expected.add("first;");
  for (int i = 0; i < 200; ++i) {
    const std::string piece = std::to_string(i) + ";";
    expected.add(piece);
    conn_->write(key, piece);
  }
  conn_->endStream(key);
  conn_->ping();
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  std::lock_guard<std::mutex> lock(o->mu);
  EXPECT_EQ(o->body, expected.text());
  EXPECT_EQ(o->close->errorCode, 0u);
}

// A stream the application resets ends at once with its code; the
// connection goes on.
TEST_P(ClientConnectionTest, ResetByTheClient) {
  startServer();
  connect(address_);
  auto o = std::make_shared<Outcome>();
  const ClientConnection::StreamKey key =
      conn_->submit(request("POST", "/upload"), "never ends", false, record(o));
  conn_->reset(key, NGHTTP2_CANCEL);
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  EXPECT_EQ(o->closeValue().errorCode, static_cast<uint32_t>(NGHTTP2_CANCEL));
  getHello();
}

// After the close a submitted stream is refused (onClose, not silence), and
// the application's close reaches every open stream once.
TEST_P(ClientConnectionTest, CloseEndsStreamsAndRefusesNewOnes) {
  startServer();
  connect(address_);
  ASSERT_TRUE(waitState(State::kConnected));
  auto open = std::make_shared<Outcome>();
  submit(request("POST", "/upload"), "part", false, open);  // its body never ends
  runSync(clientLoop_, [&] { conn_->close(); });
  ASSERT_TRUE(waitState(State::kClosed));
  ASSERT_TRUE(waitUntil([&] { return open->closed(); }));
  EXPECT_TRUE(open->closeValue().connectionLost);
  auto late = std::make_shared<Outcome>();
  submit(request("GET", "/hi"), {}, true, late);
  ASSERT_TRUE(waitUntil([&] { return late->closed(); }));
  EXPECT_TRUE(late->closeValue().refused);
  EXPECT_EQ(closedCount(), 1);
  std::lock_guard<std::mutex> lock(open->mu);
  EXPECT_EQ(open->closes, 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, ClientConnectionTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         libnet::test::pollerName);

}  // namespace
}  // namespace libnet::http2::test
