// ClientHandshake: the client's half of the opening handshake, shared by the
// callback client (WebSocketClient.cc) and the coroutine one (CoroWebSocket):
// the URL check, the TLS layer for wss://, the request, and the checks of the
// server's answer. Internal to //net/websocket; pure functions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "net/http/HttpResponseParser.h"
#include "net/http/Url.h"
#include "net/websocket/Deflate.h"

namespace libnet {
class ConnectionLayer;
}

namespace libnet::ws::detail {

// A ws:// or wss:// URL; std::invalid_argument (saying why) otherwise.
[[nodiscard]] http::Url parseWebSocketUrl(std::string_view text);

// wss://: TLS verifying the server against `caFile` (empty: the system's
// store) and the URL's host, unless verifyPeer is off. ws://: null.
[[nodiscard]] std::shared_ptr<const ConnectionLayer> clientLayer(const http::Url& url,
                                                                 const std::string& caFile,
                                                                 bool verifyPeer);

// The upgrade request for `url` with `key`, offering deflate as `deflate` says.
[[nodiscard]] std::string upgradeRequest(const http::Url& url, std::string_view key,
                                         const DeflateOptions& deflate);

// Checks a complete answer to that request: "" when it is a valid 101 (then
// *params holds the agreed deflate parameters, if any), else why not.
[[nodiscard]] std::string checkUpgradeResponse(const http::HttpResponseParser& response,
                                               std::string_view key, const DeflateOptions& deflate,
                                               std::optional<DeflateParams>* params);

// "connect to HOST:PORT failed: <errno text>"; for wss:// and EPROTO, "TLS
// handshake with HOST:PORT failed: <tlsReason>" (ConnectFailure::layer, e.g.
// "certificate verify failed: hostname mismatch").
[[nodiscard]] std::string connectError(const http::Url& url, int error,
                                       std::string_view tlsReason = {});

}  // namespace libnet::ws::detail
