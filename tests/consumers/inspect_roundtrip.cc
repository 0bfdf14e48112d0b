// inspect_roundtrip: the inspector (libnet_inspect, which brings gperftools'
// libprofiler), built by the consumer tests against an installed or imported
// libnet the way an application would. An HttpServer on an ephemeral port
// of 127.0.0.1 hands its requests to an inspect::Inspector listing that
// server; a TcpClient asks for /debug/loops raw (Connection: close) and
// checks that the answer lists the server's one loop. Uses the public
// headers only; nothing leaves the host.
//
// Exit status: 0 on the expected answer, 1 otherwise or after 10 s (the
// reason on stderr).

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <utility>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SocketAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/http/HttpServer.h"
#include "net/http/ResponseWriter.h"
#include "net/inspect/Inspector.h"

namespace {

using namespace libnet;

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

}  // namespace

int main() {
  int status = 1;
  try {
    EventLoop loop;
    http::HttpServer server(&loop, InetAddress("127.0.0.1", 0), "consumer-inspect");
    inspect::Inspector inspector({});
    server.setAsyncHandler([&](const http::HttpRequest& request, http::ResponseWriterPtr writer) {
      if (!inspector.serve(request, writer)) {
        http::HttpResponse response(true);
        response.setStatusPage(404);
        writer->respond(std::move(response));
      }
    });
    server.start();
    inspector.addServer(&server.tcpServer());
    RawFetch loops(&loop, server.listenAddress(),
                   "GET /debug/loops HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
                   [&](const std::string& response) {
                     if (response.starts_with("HTTP/1.1 200") &&
                         response.find("\r\n\r\n1 loops\nconsumer-inspect loop 0: thread ") !=
                             std::string::npos) {
                       status = 0;
                     } else {
                       std::fprintf(stderr, "inspect_roundtrip: /debug/loops answered '%s'\n",
                                    response.c_str());
                     }
                     loop.quit();
                   });
    loop.runAfter(std::chrono::seconds(10), [&] {
      std::fprintf(stderr, "inspect_roundtrip: no answer within 10 s\n");
      loop.quit();
    });
    loop.loop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inspect_roundtrip: %s\n", e.what());
    return 1;
  }
  if (status == 0) std::printf("inspect_roundtrip: OK (/debug/loops)\n");
  return status;
}
