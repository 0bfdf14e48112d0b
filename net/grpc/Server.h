// grpc::Server: gRPC services on an http::HttpServer's HTTP/2. Made after
// the HttpServer's own handlers are set and before its start(), it takes
// the server's router and AsyncHandler and calls http2::serve(), so that one
// port serves gRPC, HTTP/2 and HTTP/1.1: an HTTP/2 POST whose content-type
// is application/grpc (or application/grpc+proto, ...) is a gRPC call; every
// other request goes where it went before (the router set earlier, else the
// AsyncHandler, else the Handler). h2 over TLS (ALPN) and h2c with prior
// knowledge, on one loop or several, as http2::serve() offers them.
//
//   http::HttpServer http(&loop, addr, "rpc", {.threads = 4});
//   http.setHandler(pages);                 // optional: HTTP/1.1 and h2 pages
//   grpc::Server server(http, {});
//   GreeterImpl greeter;                    // derived from a generated Service
//   server.addService(&greeter);
//   http.start();
//
// Each call runs on its connection's loop (docs/grpc.md "Model"): the
// method's handler when the call's head is complete, with a ServerCall
// (Http2ServerCall) the handler may keep and answer from any thread. An
// unknown service or method is answered UNIMPLEMENTED, trailers only.
//
// Construct, addService() and destroy on the HttpServer's loop thread,
// before its start(); the services must outlive the server's connections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/Duration.h"
#include "net/grpc/Service.h"
#include "net/http2/Http2Server.h"
#include "net/http2/Options.h"

namespace libnet::http {
class HttpServer;
}

namespace libnet::grpc {

class Server {
 public:
  struct Options {
    // A request message (as sent, or once decompressed) longer than this
    // ends the call RESOURCE_EXHAUSTED (gRPC's default, 4 MiB).
    size_t maxReceiveMessageBytes = 4 * 1024 * 1024;
    // A response message longer than this is not sent: the call ends
    // RESOURCE_EXHAUSTED.
    size_t maxSendMessageBytes = 4 * 1024 * 1024;
    // Calls open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS,
    // http2::Options::maxConcurrentStreams): the client waits for more.
    uint32_t maxConcurrentStreams = 100;
    // The longest deadline a call may have: a client's grpc-timeout above it
    // is cut to it (a call without one gets none). Zero: no cap.
    Duration maxDeadline = Duration::zero();
    // Compress every response message (gzip) when the client accepts it;
    // ServerCall::setCompression() changes it per call.
    bool compress = false;
  };

  // Installs the router and the AsyncHandler on `http` and serves HTTP/2 on
  // it with `h2` (its maxConcurrentStreams replaced by the Options'). Throws
  // std::invalid_argument for bad options (http2::serve()'s, and a message
  // bound of zero).
  Server(http::HttpServer& http, Options options, http2::Options h2 = {});
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();

  // Before the HttpServer's start(). Throws std::invalid_argument for a
  // service whose name is taken.
  void addService(Service* service);

  // Graceful drain of the HTTP/2 connections: GOAWAY, the calls in flight
  // finish, then each connection closes; `done` runs once the last one has
  // (http2::Service::goAway). With the HttpServer's drain(), its deadline
  // cuts off calls still running then (they are cancelled). Any thread.
  void goAway(std::function<void()> done);
  // The HTTP/2 service underneath.
  [[nodiscard]] http2::Service& http2() { return *h2_; }
  [[nodiscard]] const Options& options() const { return options_; }

  struct Shared;  // what the router and the handler share (Server.cc)

 private:
  const Options options_;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<http2::Service> h2_;
};

}  // namespace libnet::grpc
