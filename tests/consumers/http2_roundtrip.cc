// http2_roundtrip: the HTTP/2 program the consumer tests build against an
// installed or imported libnet_http2, the way an application would. Two
// servers on ephemeral ports of 127.0.0.1 answer GET /hello with a fixed
// body over h2c (prior knowledge): an HttpServer made to speak HTTP/2 by
// http2::serve (callbacks), and a TcpServer whose coroutines serve each
// connection with http2::serveConnection (the coroutine layer). A TcpClient
// per server speaks HTTP/2 with frames made here (the client preface, an
// empty SETTINGS, one HEADERS frame whose HPACK block uses only static table
// entries and literals) and checks that the server's first frame is its
// SETTINGS, that stream 1 is answered with status 200 and exactly that body,
// and that no GOAWAY or RST_STREAM comes. The clients need no HTTP/2
// library, so the program calls nghttp2 only through libnet_http2. Uses the
// public headers only; no packet leaves the host.
//
// Exit status: 0 when both answered as expected, 1 on a failed connect, an
// unexpected frame, status or body, or a 10 s timeout (the reason on stderr).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SocketAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/http/HttpServer.h"
#include "net/http2/CoroServe.h"
#include "net/http2/Http2Server.h"
#include "net/http2/ServerSession.h"

namespace {

// Frame types and flags (RFC 9113 section 6).
constexpr uint8_t kData = 0x0;
constexpr uint8_t kHeaders = 0x1;
constexpr uint8_t kRstStream = 0x3;
constexpr uint8_t kSettings = 0x4;
constexpr uint8_t kGoAway = 0x7;
constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kAck = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kPadded = 0x8;
constexpr uint8_t kPriority = 0x20;
constexpr size_t kFrameHeader = 9;

std::string frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
  std::string out;
  for (int shift : {16, 8, 0}) out.push_back(static_cast<char>(payload.size() >> shift));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>(stream >> shift));
  out += payload;
  return out;
}

// An HPACK literal without indexing whose name is static table entry
// `nameIndex` (RFC 7541 section 6.2.2; both numbers fit their prefixes).
std::string literal(uint8_t nameIndex, std::string_view value) {
  std::string out;
  out.push_back(static_cast<char>(nameIndex));
  out.push_back(static_cast<char>(value.size()));
  out += value;
  return out;
}

std::string request(uint16_t port) {
  std::string block = "\x82\x86";  // :method GET, :scheme http (static entries 2 and 6)
  block += literal(4, "/hello");   // :path
  block += literal(1, "127.0.0.1:" + std::to_string(port));  // :authority
  return std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + frame(kSettings, 0, 0, "") +
         frame(kHeaders, kEndStream | kEndHeaders, 1, block);
}

// The client's side of the exchange: frames taken whole off its input.
class Exchange {
 public:
  // `onOver` runs once, when the exchange is over either way.
  Exchange(std::string expected, std::function<void()> onOver)
      : expected_(std::move(expected)), onOver_(std::move(onOver)) {}

  // Consumes every whole frame in `input`; true once the exchange is over
  // (ok() says how it went).
  bool take(const libnet::TcpConnectionPtr& conn, libnet::Buffer* input) {
    while (!over() && input->readableBytes() >= kFrameHeader) {
      const auto* h = reinterpret_cast<const unsigned char*>(input->peek());
      const size_t length = (size_t{h[0]} << 16) | (size_t{h[1]} << 8) | h[2];
      if (input->readableBytes() < kFrameHeader + length) break;
      const uint32_t stream =
          ((uint32_t{h[5]} & 0x7f) << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8];
      onFrame(conn, h[3], h[4], stream, std::string_view(input->peek() + kFrameHeader, length));
      input->retrieve(kFrameHeader + length);
    }
    settle();
    return over();
  }

  void fail(std::string why) {
    if (!over()) error_ = std::move(why);
    settle();
  }
  [[nodiscard]] bool over() const { return done_ || !error_.empty(); }
  [[nodiscard]] bool ok() const { return done_ && error_.empty(); }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  void onFrame(const libnet::TcpConnectionPtr& conn, uint8_t type, uint8_t flags, uint32_t stream,
               std::string_view payload) {
    if (!sawSettings_ && type != kSettings) return fail("the server's first frame is not SETTINGS");
    if (type == kSettings && !(flags & kAck)) {
      sawSettings_ = true;
      conn->send(frame(kSettings, kAck, 0, ""));
    } else if (type == kGoAway || type == kRstStream) {
      fail(type == kGoAway ? "GOAWAY from the server" : "stream reset by the server");
    } else if (type == kHeaders && stream == 1) {
      onHeaders(flags, withoutPadding(flags, payload));
    } else if (type == kData && stream == 1) {
      if (!sawHeaders_) return fail("DATA before HEADERS");
      body_ += withoutPadding(flags, payload);
      if (flags & kEndStream) done_ = true;
    }
    if (done_ && body_ != expected_) error_ = "body '" + body_ + "'";
  }

  void onHeaders(uint8_t flags, std::string_view block) {
    if (flags & kPriority) block.remove_prefix(std::min<size_t>(5, block.size()));
    // Static entry 8 is ":status: 200", which an HPACK encoder sends indexed.
    if (!(flags & kEndHeaders) || block.empty() || static_cast<uint8_t>(block[0]) != 0x88) {
      return fail("the response's headers do not start with :status 200");
    }
    sawHeaders_ = true;
    if (flags & kEndStream) done_ = true;
  }

  void settle() {
    if (!over() || settled_) return;
    settled_ = true;
    onOver_();
  }

  static std::string_view withoutPadding(uint8_t flags, std::string_view payload) {
    if (!(flags & kPadded) || payload.empty()) return payload;
    const size_t pad = static_cast<uint8_t>(payload[0]);
    payload.remove_prefix(1);
    return payload.substr(0, payload.size() > pad ? payload.size() - pad : 0);
  }

  const std::string expected_;
  const std::function<void()> onOver_;
  std::string body_;
  std::string error_;
  bool sawSettings_ = false;
  bool sawHeaders_ = false;
  bool done_ = false;
  bool settled_ = false;
};

// A client that asks the server at `address` for /hello over h2c and hands
// what comes back to `exchange`.
std::unique_ptr<libnet::TcpClient> startClient(libnet::EventLoop* loop,
                                               const libnet::SocketAddress& address,
                                               Exchange* exchange) {
  using namespace libnet;
  auto client = std::make_unique<TcpClient>(loop, address, "consumer-h2-client");
  TcpClient* raw = client.get();
  client->setConnectErrorCallback([exchange, raw](int error) {
    raw->stop();
    exchange->fail("connect failed: errno " + std::to_string(error));
  });
  client->setConnectionCallback([exchange, port = address.port()](const TcpConnectionPtr& conn) {
    if (conn->connected()) {
      conn->send(request(port));
      return;
    }
    exchange->fail("the server closed the connection");
  });
  client->setMessageCallback([exchange](const TcpConnectionPtr& conn, Buffer* input, Timestamp) {
    if (exchange->take(conn, input)) conn->shutdown();
  });
  client->connect();
  return client;
}

libnet::coro::Task<> serveH2c(libnet::coro::Stream stream,
                              const libnet::http2::ServerSession::Config* config) {
  co_await libnet::http2::serveConnection(stream, *config, std::chrono::seconds(10),
                                          std::chrono::seconds(10));
}

}  // namespace

int main() {
  using namespace libnet;
  const std::string body = "hello from a program that links libnet_http2";
  const http::HttpServer::Handler handler = [&](const http::HttpRequest& request,
                                                http::HttpResponse* response) {
    if (request.path() != "/hello") return response->setStatusPage(404);
    response->setStatus(200);
    response->setContentType("text/plain");
    response->setBody(body);
  };
  EventLoop loop;
  int pending = 2;
  const auto onOver = [&] {
    if (--pending == 0) loop.quit();
  };
  Exchange callbacks(body, onOver);
  Exchange coroutines(body, onOver);
  try {
    http::HttpServer server(&loop, InetAddress("127.0.0.1", 0), "consumer-h2");
    server.setHandler(handler);
    std::shared_ptr<http2::Service> h2 = http2::serve(server, {.priorKnowledge = true});
    server.start();

    const http2::ServerSession::Config config{.handler = handler};
    TcpServer coroServer(&loop, InetAddress("127.0.0.1", 0), "consumer-h2-coro");
    coro::serve(coroServer,
                [&config](coro::Stream stream) { return serveH2c(std::move(stream), &config); });
    coroServer.start();

    auto first = startClient(&loop, server.listenAddress(), &callbacks);
    auto second = startClient(&loop, coroServer.listenAddress(), &coroutines);
    loop.runAfter(std::chrono::seconds(10), [&] {
      callbacks.fail("no answer within 10 s");
      coroutines.fail("no answer within 10 s");
    });
    loop.loop();
  } catch (const std::exception& e) {
    callbacks.fail(e.what());
    coroutines.fail(e.what());
  }
  bool ok = true;
  for (const auto& [server, exchange] :
       {std::pair{"http2::serve", &callbacks}, std::pair{"http2::serveConnection", &coroutines}}) {
    if (exchange->ok()) continue;
    std::fprintf(stderr, "http2_roundtrip: %s: %s\n", server, exchange->error().c_str());
    ok = false;
  }
  if (!ok) return 1;
  std::printf("http2_roundtrip: OK (%zu bytes over h2c, callbacks and coroutines)\n", body.size());
  return 0;
}
