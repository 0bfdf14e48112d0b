// http_fetch_roundtrip: the HTTP client program the consumer tests build
// against an installed or imported libnet_http_client, the way an
// application would. An HttpServer (from libnet itself) on an ephemeral port
// of 127.0.0.1 answers one path with a fixed body; an HttpClient fetches
// http://127.0.0.1:PORT/hello and checks the status and that exactly that
// body came back. Uses the public headers only; the URL's host is numeric,
// so no name is looked up and no packet leaves the host.
//
// Exit status: 0 on the expected answer, 1 on a client error, another
// status or body, or a 10 s timeout (the reason on stderr).

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>

#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/http/ClientTypes.h"
#include "net/http/HttpClient.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/http/HttpServer.h"

int main() {
  using namespace libnet;
  const std::string body = "hello from a program that links libnet_http_client";
  int status = 1;
  try {
    EventLoop loop;
    http::HttpServer server(&loop, InetAddress("127.0.0.1", 0), "consumer-http");
    server.setHandler([&](const http::HttpRequest& request, http::HttpResponse* response) {
      if (request.path() != "/hello") return response->setStatusPage(404);
      response->setStatus(200);
      response->setContentType("text/plain");
      response->setBody(body);
    });
    server.start();
    const std::string url =
        "http://127.0.0.1:" + std::to_string(server.listenAddress().port()) + "/hello";

    http::HttpClient client(&loop, {});
    client.request({.url = url}, [&](http::FetchResult result) {
      if (!result.ok()) {
        std::fprintf(stderr, "http_fetch_roundtrip: %s: %s\n", url.c_str(),
                     std::string(result.errorMessage()).c_str());
      } else if (result.response().status != 200 || result.response().body != body) {
        std::fprintf(stderr, "http_fetch_roundtrip: %s answered %d '%s'\n", url.c_str(),
                     result.response().status, result.response().body.c_str());
      } else {
        status = 0;
      }
      loop.quit();
    });
    loop.runAfter(std::chrono::seconds(10), [&] {
      std::fprintf(stderr, "http_fetch_roundtrip: no answer within 10 s\n");
      loop.quit();
    });
    loop.loop();
    if (status == 0) std::printf("http_fetch_roundtrip: OK (%zu bytes)\n", body.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "http_fetch_roundtrip: %s\n", e.what());
    return 1;
  }
  return status;
}
