// fastcgi::FastCgiHandler: an asynchronous HTTP handler that passes each
// request to a FastCGI application (php-fpm) over a Unix socket or TCP, as
// nginx's fastcgi_pass does, and streams its answer back:
//
//   fastcgi::UpstreamOptions options;
//   options.address = *SocketAddress::parse("unix:/run/php/php-fpm.sock");
//   options.documentRoot = "/srv/www";
//   fastcgi::FastCgiHandler php(options);
//   server.setAsyncHandler([php](const HttpRequest& request, ResponseWriterPtr writer) {
//     if (FastCgiHandler::matches(".php", request.path())) return php(request, writer);
//     ...
//   });
//
// Each loop keeps its own pool of FCGI_KEEP_CONN connections (UpstreamPool:
// no lock between loops once a loop has its pool); the request's CGI
// variables are those of CgiParams.h; the request body goes to FCGI_STDIN
// in pieces under the connection's flow control; the application's
// FCGI_STDOUT is parsed (CgiResponseParser) and written to the client with
// its back-pressure: a client that does not read stops the reading from the
// application. Failures: refused, closed mid-answer or malformed -> 502;
// connect, send or read timeout -> 504; pool and queue full, or the wait too
// long -> 503; a bad path (a ".." segment, a bad escape) -> 400. Once the
// head went out a failure aborts the answer (ResponseWriter::abort()). The
// client leaving closes the application's connection (php-fpm stops the
// script when it next writes). FCGI_STDERR goes to the log (WARN, bounded).
// docs/fastcgi.md has the model, the limits and their defaults.
//
// A copyable value (shared state); construct anywhere, call from any
// thread: the work runs on the writer's loop.
#pragma once

#include <memory>
#include <string_view>

#include "net/fastcgi/UpstreamOptions.h"
#include "net/http/HttpRequest.h"
#include "net/http/ResponseWriter.h"

namespace libnet::fastcgi {

class FastCgiHandler {
 public:
  // Throws std::invalid_argument for an option that cannot work (no
  // address, a zero pool, a timeout <= 0).
  explicit FastCgiHandler(UpstreamOptions options);

  void operator()(const http::HttpRequest& request, http::ResponseWriterPtr writer) const;

  // Routing help: a pattern starting with '/' matches a path prefix
  // ("/app/"), anything else a suffix (".php").
  [[nodiscard]] static bool matches(std::string_view pattern, std::string_view path);

  [[nodiscard]] const UpstreamOptions& options() const;

 private:
  struct Shared;
  void handleInLoop(const http::HttpRequest& request, http::ResponseWriterPtr writer) const;

  std::shared_ptr<Shared> shared_;
};

}  // namespace libnet::fastcgi
