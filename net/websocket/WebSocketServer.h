// WebSocket server upgrade: turns an HttpServer's upgrade requests into
// WebSockets (net/websocket/WebSocket.h).
//
//   http::HttpServer server(&loop, addr, "ws");
//   ws::serve(server, "/echo", {}, {.onMessage = [](const ws::WebSocketPtr& ws,
//                                                   ws::MessageType type, std::string_view m) {
//     (void)ws->send(type, m);
//   }});
//   server.start();
//
// serve() sets the server's upgrade handler (HttpServer::setUpgradeHandler):
// an upgrade to websocket whose path matches is checked (checkUpgradeRequest:
// a bad one is answered with the status it gives, 400 / 405 / 426, and
// closed), deflate is negotiated when Options::deflate allows it, the 101 is
// sent, and the connection becomes a server-role WebSocket with `handlers`;
// the frames the client sent right behind its request are read at once.
// Other requests (other paths, plain HTTP) go to the server's handler. With
// TLS (HttpServer Options::layer) and I/O threads alike: each WebSocket lives
// on its connection's loop thread. The server's idle timeout still applies
// to its WebSockets (a keep-alive ping, Options::pingInterval, under it keeps
// a quiet one open), and so does its output limit (back-pressure).
#pragma once

#include <string>

#include "net/http/HttpServer.h"
#include "net/websocket/Options.h"
#include "net/websocket/WebSocket.h"

namespace libnet::ws {

// Serves WebSockets on `server` at `path` (exact match of the request's path;
// "" matches every path). Before server.start(); throws
// std::invalid_argument for bad options (check()).
void serve(http::HttpServer& server, std::string path, Options options, Handlers handlers);

// The upgrade itself, for an upgrade handler of one's own (routing on more
// than the path, several endpoints): kDeclined for a request that does not
// ask for websocket, kRejected (with `rejection` filled) for a bad one,
// kTaken once the WebSocket is open.
http::HttpServer::Upgrade acceptUpgrade(const http::HttpRequest& request,
                                        const TcpConnectionPtr& conn, Buffer* leftover,
                                        http::HttpResponse* rejection, const Options& options,
                                        const Handlers& handlers);

// The request's Sec-WebSocket-Extensions fields, joined with ", ".
[[nodiscard]] std::string extensionsOf(const http::HttpRequest& request);

}  // namespace libnet::ws
