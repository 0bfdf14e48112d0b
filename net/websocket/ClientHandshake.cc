#include "net/websocket/ClientHandshake.h"

#include <strings.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"
#include "net/websocket/Handshake.h"

namespace libnet::ws::detail {

namespace {

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Whether a comma-separated field value lists `token` (case-insensitive).
bool hasToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    std::string_view item = value.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (equalsIgnoreCase(item, token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

http::Url parseWebSocketUrl(std::string_view text) {
  std::string error;
  const std::optional<http::Url> url = http::Url::parse(text, &error);
  if (!url)
    throw std::invalid_argument("ws::connect: bad URL '" + std::string(text) + "': " + error);
  if (url->scheme() != http::Url::Scheme::kWs && url->scheme() != http::Url::Scheme::kWss) {
    throw std::invalid_argument("ws::connect: '" + std::string(text) +
                                "' is not a ws:// or wss:// URL");
  }
  return *url;
}

std::shared_ptr<const ConnectionLayer> clientLayer(const http::Url& url, const std::string& caFile,
                                                   bool verifyPeer) {
  if (!url.secure()) return nullptr;
  auto context = tls::Context::newClient({.caFile = caFile, .verifyPeer = verifyPeer});
  return tls::newLayer(std::move(context), url.host());
}

std::string upgradeRequest(const http::Url& url, std::string_view key,
                           const DeflateOptions& deflate) {
  return makeUpgradeRequest(url.hostHeader(), url.target(), key, makeOffer(deflate));
}

std::string checkUpgradeResponse(const http::HttpResponseParser& response, std::string_view key,
                                 const DeflateOptions& deflate,
                                 std::optional<DeflateParams>* params) {
  if (response.status() != 101) {
    return "the server answered " + std::to_string(response.status()) + " " +
           std::string(response.reason()) + " instead of 101";
  }
  const auto upgrade = response.header("Upgrade");
  if (!upgrade || !equalsIgnoreCase(*upgrade, "websocket")) return "101 without Upgrade: websocket";
  const auto connection = response.header("Connection");
  if (!connection || !hasToken(*connection, "upgrade")) return "101 without Connection: upgrade";
  const auto accept = response.header("Sec-WebSocket-Accept");
  if (!accept || !checkAcceptKey(key, *accept)) return "wrong Sec-WebSocket-Accept in the 101";
  if (response.header("Sec-WebSocket-Protocol")) return "a subprotocol that was not asked for";
  const std::string_view extensions = response.header("Sec-WebSocket-Extensions").value_or("");
  if (extensions.empty()) return {};
  if (!deflate.enabled) return "an extension that was not offered: " + std::string(extensions);
  std::string error;
  *params = acceptResponse(extensions, deflate, &error);
  if (!*params) return "bad Sec-WebSocket-Extensions: " + error;
  return {};
}

std::string connectError(const http::Url& url, int error, std::string_view tlsReason) {
  if (error == EPROTO && url.secure()) {
    return "TLS handshake with " + url.hostPort() + " failed: " +
           (tlsReason.empty() ? std::string("protocol error") : std::string(tlsReason));
  }
  return "connect to " + url.hostPort() + " failed: " + std::strerror(error);
}

}  // namespace libnet::ws::detail
