// HttpServer: HTTP/1.1 on a TcpServer. One HttpParser per connection (kept in
// the connection's context); every complete request already received is
// answered in order before more is read (pipelining), and the answers to one
// batch go out in one write. The handler runs on the connection's loop thread
// and fills an HttpResponse; the server adds Content-Length, Date (formatted
// once per second per thread) and the Connection header, and sends a file
// body with TcpConnection::sendFile when the handler attached one.
//
// Protection, all on by default: answers to a pipelining client that does
// not read them are capped (maxQueuedOutput; reading pauses until they
// drain); the parser's limits (414 / 431 / 413 / 400 /
// 501 / 505, then close); a request whose line and headers are not complete
// within headerTimeout after its first byte is answered 408 and closed when
// its next bytes arrive (a client that goes silent instead is kicked by the
// idle timeout); keep-alive connections idle for idleTimeout are closed by the
// TcpServer's timing wheel. After an error response the server half-closes
// and discards whatever else the client sends, so the response is not lost
// to a reset.
//
// Construct, start() and destroy on the base loop's thread (as TcpServer).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/Timestamp.h"
#include "net/Callbacks.h"
#include "net/InetAddress.h"
#include "net/TcpServer.h"
#include "net/http/HttpParser.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"

namespace libnet {
class Buffer;
class EventLoop;
}  // namespace libnet

namespace libnet::http {

struct HttpServerOptions {
  HttpParser::Limits limits;
  Duration headerTimeout = std::chrono::seconds(10);
  Duration idleTimeout = std::chrono::seconds(60);  // zero: never kick idle connections
  // File bodies up to this size are read into the response and sent with
  // its headers in one write; larger ones go out with sendfile(2).
  size_t inlineFileMax = 64 * 1024;
  // A client that pipelines requests without reading the answers is not
  // answered further (nor read from) while more than this waits to be
  // written to it; TCP flow control then holds the client back.
  size_t maxQueuedOutput = 1024 * 1024;
};

class HttpServer {
 public:
  // May throw: an escaping exception becomes a 500 and a close.
  using Handler = std::function<void(const HttpRequest&, HttpResponse*)>;

  using Options = HttpServerOptions;

  // Binds (throws std::system_error like TcpServer).
  HttpServer(EventLoop* loop, const InetAddress& listenAddr, std::string name,
             Options options = {});
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void setHandler(Handler handler) { handler_ = std::move(handler); }
  void setThreadNum(int numThreads) { server_.setThreadNum(numThreads); }
  void start() { server_.start(); }

  [[nodiscard]] InetAddress listenAddress() const { return server_.listenAddress(); }
  [[nodiscard]] TcpServer& tcpServer() { return server_; }

 private:
  struct ConnectionState;
  // The HTTP state kept in conn's context; null once the connection is down.
  static ConnectionState* stateOf(const TcpConnectionPtr& conn);

  void onConnection(const TcpConnectionPtr& conn);
  void onMessage(const TcpConnectionPtr& conn, Buffer* buf, Timestamp receiveTime);
  // The output of a paused connection has drained: read and answer again.
  static void resume(const TcpConnectionPtr& conn);
  // Appends one response (and sends any file body) to `out`; false when the
  // connection is to close after it.
  bool respond(const TcpConnectionPtr& conn, const HttpRequest& request, Buffer* out);
  static void appendError(int status, Buffer* out);

  TcpServer server_;
  Options options_;
  Handler handler_;
};

}  // namespace libnet::http
