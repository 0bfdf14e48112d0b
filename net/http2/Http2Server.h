// HTTP/2 on an HttpServer: the same handler answers HTTP/1.1 and HTTP/2.
//
//   http::HttpServer server(&loop, addr, "web", {.layer = tls::newLayer(
//       tls::Context::newServer({.certChainFile = ..., .keyFile = ...,
//                                .alpn = {"h2", "http/1.1"}}))});
//   server.setHandler(handler);
//   std::shared_ptr<http2::Service> h2 = http2::serve(server, {});
//   server.start();
//
// serve() sets the server's connection taker (HttpServer::setConnectionTaker):
// a TLS connection whose ALPN choice is "h2" speaks HTTP/2 from its first
// byte; a connection that starts with the client preface does too
// (prior knowledge, "h2c", unless Options::priorKnowledge is off), and so,
// on such a port, does one whose first line is no HTTP/1.x request line (a
// broken preface: GOAWAY, not HTTP/1.1's 400); every other connection stays
// HTTP/1.1. Upgrade: h2c is not offered.
//
// Each HTTP/2 connection runs a ServerSession on its loop thread. What it
// shares with HTTP/1.1: the handler, the parser's limits (header section:
// SETTINGS_MAX_HEADER_LIST_SIZE and 431; body: 413; a file body is read one
// DATA frame at a time into the output, whatever its size), the output limit (frames are produced
// only while the connection's queued output is under it; reading pauses past it, as for HTTP/1.1),
// the header timeout (the client preface, and any header block, must be complete within it) and the
// idle timeout as the window of a rate check (a connection that owes the client response bytes and
// has sent fewer than Options::minSendRate a second over a window is closed: a client that keeps
// its window shut, opens it a byte at a time, or reads a trickle; PINGs do not count), and the
// server-wide budget of request bodies (HttpServer::Options::maxBufferedBodyBytes, drawn on by both
// protocols). serve() throws std::invalid_argument for options that cannot work together
// (ServerSession::validate()).
//
// The server's AsyncHandler and router (HttpServer::setRouter: request
// bodies in pieces, docs/http2.md) answer HTTP/2 as they answer HTTP/1.1;
// serve() also sets the server's busy check (HttpServer::setBusyCheck), so
// that the idle timeout spares a connection whose answers are still to come.
//
// Call serve() after setHandler() and before start(). The Service may be
// dropped: connections keep what they need.
#pragma once

#include <functional>
#include <memory>

#include "net/http2/Options.h"

namespace libnet::http {
class HttpServer;
}  // namespace libnet::http

namespace libnet::http2 {

class Service {
 public:
  virtual ~Service() = default;
  // Graceful close: every HTTP/2 connection gets GOAWAY (NO_ERROR) naming
  // the last stream it took; those streams are answered, then each closes;
  // connections taken later get it at once. `done` runs once the last of
  // them has closed (on that connection's loop thread; at once, here, when
  // there are none). Any thread.
  virtual void goAway(std::function<void()> done) = 0;
  // HTTP/2 connections open now. Any thread.
  [[nodiscard]] virtual size_t connections() const = 0;
};

[[nodiscard]] std::shared_ptr<Service> serve(http::HttpServer& server, Options options = {});

}  // namespace libnet::http2
