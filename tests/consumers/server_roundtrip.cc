// server_roundtrip: the HTTP server's coroutine handlers and FastCGI, built
// by the consumer tests against an installed or imported libnet the way an
// application would (both are in libnet itself: neither brings a system
// library of its own). An HttpServer on an ephemeral port of 127.0.0.1
// routes POST /coro to a coroutine (http::coroHandler) that takes the
// request body in pieces (http::RequestBodyReader, co_await http::read) and
// answers it back with co_await http::write; everything else goes to a
// fastcgi::FastCgiHandler whose application server is a unix socket path
// that does not exist, so that it answers 502 without php-fpm. A TcpClient
// sends each request raw (Connection: close) and checks the answers. Uses
// the public headers only; nothing leaves the host.
//
// Exit status: 0 when both answers are as expected, 1 otherwise or after
// 10 s (the reason on stderr).

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SocketAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/coro/Task.h"
#include "net/fastcgi/FastCgiHandler.h"
#include "net/fastcgi/UpstreamOptions.h"
#include "net/http/CoroHandler.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/http/HttpServer.h"
#include "net/http/RequestBodyReader.h"
#include "net/http/ResponseWriteAwaiter.h"
#include "net/http/ResponseWriter.h"

namespace {

using namespace libnet;

// The request body, read a piece at a time, then answered back after "got ".
coro::Task<> echoBody(http::HttpRequest, http::ResponseWriterPtr writer) {
  http::RequestBodyReader reader(writer->requestBody());
  std::string body;
  for (;;) {
    http::BodyPiece piece = co_await http::read(reader);
    if (piece.status == coro::Errc::kEof) break;
    if (piece.status != coro::Errc::kOk) co_return;
    body += piece.data;
  }
  const std::string answer = "got " + body;
  http::HttpResponse head(false);
  head.setStatus(200);
  head.setContentType("text/plain");
  head.setContentLength(answer.size());
  writer->start(std::move(head));
  if (co_await http::write(writer, answer) != coro::Errc::kOk) co_return;
  writer->finish();
}

// One raw request on a connection of its own; `done` gets all that came
// back once the server closes.
class RawFetch {
 public:
  RawFetch(EventLoop* loop, const SocketAddress& server, std::string request,
           std::function<void(const std::string&)> done)
      : client_(loop, server, "consumer-client"), request_(std::move(request)) {
    client_.setConnectErrorCallback(
        [done](int error) { done("connect failed: errno " + std::to_string(error)); });
    client_.setConnectionCallback([this, done](const TcpConnectionPtr& conn) {
      if (conn->connected()) {
        conn->send(request_);
      } else {
        done(received_);
      }
    });
    client_.setMessageCallback([this](const TcpConnectionPtr&, Buffer* buffer, Timestamp) {
      received_ += buffer->retrieveAllAsString();
    });
    client_.connect();
  }

 private:
  TcpClient client_;
  std::string request_;
  std::string received_;
};

bool answered(const std::string& what, const std::string& response, const std::string& status,
              const std::string& body) {
  if (response.starts_with("HTTP/1.1 " + status) && response.ends_with(body)) return true;
  std::fprintf(stderr, "server_roundtrip: %s answered '%s'\n", what.c_str(), response.c_str());
  return false;
}

void route(http::HttpServer& server, const fastcgi::FastCgiHandler& fastcgi) {
  server.setRouter([](const http::HttpRequest& head) {
    return head.path() == "/coro" ? http::HttpServer::Route::kStreamedBody
                                  : http::HttpServer::Route::kAsync;
  });
  server.setAsyncHandler([coro = http::coroHandler(echoBody), fastcgi](
                             const http::HttpRequest& request, http::ResponseWriterPtr writer) {
    if (request.path() == "/coro") return coro(request, std::move(writer));
    fastcgi(request, std::move(writer));
  });
}

}  // namespace

int main() {
  const std::string body = "a body sent to a coroutine";
  int answers = 0;
  bool ok = true;
  try {
    EventLoop loop;
    http::HttpServer server(&loop, InetAddress("127.0.0.1", 0), "consumer-server");
    fastcgi::UpstreamOptions upstream;
    upstream.address = SocketAddress::unixPath("/nonexistent/libnet-consumer.sock");
    upstream.documentRoot = "/nonexistent";
    route(server, fastcgi::FastCgiHandler(std::move(upstream)));
    server.start();
    auto check = [&](bool good) {
      ok = ok && good;
      if (++answers == 2) loop.quit();
    };
    const SocketAddress address = server.listenAddress();
    RawFetch coro(&loop, address,
                  "POST /coro HTTP/1.1\r\nHost: a\r\nConnection: close\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body,
                  [&](const std::string& r) { check(answered("/coro", r, "200", "got " + body)); });
    RawFetch php(&loop, address, "GET /index.php HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
                 [&](const std::string& r) { check(answered("/index.php", r, "502", "")); });
    loop.runAfter(std::chrono::seconds(10), [&] {
      std::fprintf(stderr, "server_roundtrip: %d of 2 answers within 10 s\n", answers);
      ok = false;
      loop.quit();
    });
    loop.loop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "server_roundtrip: %s\n", e.what());
    return 1;
  }
  if (!ok) return 1;
  std::printf("server_roundtrip: OK (coroutine handler and FastCGI 502)\n");
  return 0;
}
