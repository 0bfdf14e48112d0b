#include "net/websocket/WebSocketServer.h"

#include <strings.h>

#include <optional>
#include <string>
#include <utility>

#include "net/TcpConnection.h"
#include "net/websocket/Deflate.h"
#include "net/websocket/Handshake.h"

namespace libnet::ws {

std::string extensionsOf(const http::HttpRequest& request) {
  std::string joined;
  for (const auto& [name, value] : request.headers()) {
    if (::strcasecmp(name.c_str(), "Sec-WebSocket-Extensions") != 0) continue;
    if (!joined.empty()) joined += ", ";
    joined += value;
  }
  return joined;
}

http::HttpServer::Upgrade acceptUpgrade(const http::HttpRequest& request,
                                        const TcpConnectionPtr& conn, Buffer* leftover,
                                        http::HttpResponse* rejection, const Options& options,
                                        const Handlers& handlers) {
  using Upgrade = http::HttpServer::Upgrade;
  if (!isUpgradeRequest(request)) return Upgrade::kDeclined;
  const UpgradeCheck check = checkUpgradeRequest(request);
  if (check.status != 0) {
    rejection->setStatusPage(check.status);
    for (const auto& [name, value] : check.headers) rejection->addHeader(name, value);
    return Upgrade::kRejected;
  }
  std::optional<DeflateParams> params;
  std::string extensions;
  if (options.deflate.enabled) {
    params = negotiateOffer(extensionsOf(request), options.deflate, &extensions);
  }
  const std::string_view key = *request.header("Sec-WebSocket-Key");
  conn->send(makeUpgradeResponse(key, extensions));
  const WebSocketPtr ws =
      WebSocket::create(conn, Role::kServer, options, std::move(params), handlers);
  ws->start(leftover);
  return Upgrade::kTaken;
}

void serve(http::HttpServer& server, std::string path, Options options, Handlers handlers) {
  check(options);
  server.setUpgradeHandler(
      [path = std::move(path), options = std::move(options), handlers = std::move(handlers)](
          const http::HttpRequest& request, const TcpConnectionPtr& conn, Buffer* leftover,
          http::HttpResponse* rejection) {
        if (!path.empty() && request.path() != path) return http::HttpServer::Upgrade::kDeclined;
        return acceptUpgrade(request, conn, leftover, rejection, options, handlers);
      });
}

}  // namespace libnet::ws
