// fastcgi::UpstreamOptions: where a FastCGI application listens, how many
// connections each loop keeps to it, how long to wait for it, and what the
// CGI variables say about the server. A value; FastCgiHandler checks it.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "base/Duration.h"
#include "net/SocketAddress.h"

namespace libnet::fastcgi {

struct UpstreamOptions {
  // The application: SocketAddress::parse("unix:/run/php/php-fpm.sock") or
  // an IP address and port.
  SocketAddress address;

  // DOCUMENT_ROOT; SCRIPT_FILENAME = documentRoot + the decoded path.
  std::string documentRoot;
  // When set, SCRIPT_FILENAME of every request (a front controller).
  std::string scriptFilename;
  // SERVER_NAME; empty: the request's Host, else the local address.
  std::string serverName;
  // HTTPS=on and REQUEST_SCHEME=https: the server speaks TLS.
  bool https = false;

  // Connections to the application per loop (FCGI_KEEP_CONN: each stays
  // open for the next request). php-fpm gives every open connection a child
  // of its own for as long as it is open, so loops x poolSize must not
  // exceed pm.max_children: a connection beyond them waits in php-fpm's
  // listen queue while the kept ones hold every child, and its request
  // times out (504). 4 fits Debian's default pool (5 children) with one loop.
  size_t poolSize = 4;
  // Requests a loop keeps waiting for a connection when all poolSize are
  // busy; one more is answered 503 at once. 0: none wait.
  size_t queueLength = 256;
  // How long a request may wait in that queue (503 after it).
  Duration queueTimeout = std::chrono::seconds(10);
  // Connecting (502 if refused, 504 past the timeout).
  Duration connectTimeout = std::chrono::seconds(5);
  // Between two successful writes of the request to the application (504).
  Duration sendTimeout = std::chrono::seconds(60);
  // Between two reads of the answer while the client keeps up (504 before
  // the head went out; the answer is cut off after it).
  Duration readTimeout = std::chrono::seconds(60);
  // An unused pooled connection is closed after this (giving php-fpm its
  // child back).
  Duration idleTimeout = std::chrono::seconds(30);
  // The CGI response head (Status, Content-Type, fields) at most (502).
  size_t maxHeadBytes = 64 * 1024;
  // A request body streamed to the application (the router's
  // Route::kStreamedBody, with a Content-Length): the client's body is
  // paused while this much of it waits to go to the application (encoded
  // as FCGI_STDIN, not yet handed to the connection) and resumed once the
  // connection has taken it; with the piece on its way in the connection's
  // output, an upload holds about twice this (plus one read) in the server,
  // whatever its size.
  size_t stdinHighWater = 256 * 1024;
  // FCGI_STDERR bytes logged per request (as WARN lines); the rest is
  // counted and dropped.
  size_t maxStderrLogBytes = 8 * 1024;
};

}  // namespace libnet::fastcgi
