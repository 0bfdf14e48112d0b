// Handshake: the HTTP/1.1 Upgrade handshake of RFC 6455 section 4: the
// Sec-WebSocket-Accept computation, client keys, the server's checks of an
// upgrade request and the 101 response it answers with. Pure functions; safe
// from any thread (newClientKey() reads getrandom()).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/http/HttpRequest.h"

namespace libnet::ws {

// base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")) (RFC 6455 4.2.2).
[[nodiscard]] std::string acceptKey(std::string_view secWebSocketKey);

// A fresh Sec-WebSocket-Key: 16 random bytes, base64 (24 characters).
[[nodiscard]] std::string newClientKey();

struct UpgradeCheck {
  // 0: a valid upgrade request; else the status to answer (400, 405, 426).
  int status = 0;
  std::string reason;
  // Fields the error response must carry (426: Sec-WebSocket-Version: 13).
  std::vector<std::pair<std::string, std::string>> headers;
};

// The server's checks of an opening handshake (RFC 6455 4.2.1): a GET,
// HTTP/1.1, `Upgrade: websocket` (case-insensitive), `upgrade` among the
// Connection tokens, `Sec-WebSocket-Version: 13` (else 426 with the version
// header) and a Sec-WebSocket-Key that is the base64 of 16 bytes.
[[nodiscard]] UpgradeCheck checkUpgradeRequest(const http::HttpRequest& request);

// Quick routing test: the request asks to upgrade to websocket (Upgrade
// field says websocket); checkUpgradeRequest() tells whether it may.
[[nodiscard]] bool isUpgradeRequest(const http::HttpRequest& request);

// The "HTTP/1.1 101 Switching Protocols" response head, blank line
// included, for a request with `secWebSocketKey`; Sec-WebSocket-Extensions
// and Sec-WebSocket-Protocol are added when non-empty.
[[nodiscard]] std::string makeUpgradeResponse(std::string_view secWebSocketKey,
                                              std::string_view extensions = {},
                                              std::string_view subprotocol = {});

// The client's opening request head ("GET target HTTP/1.1" ... blank line)
// with `key` (from newClientKey()); Sec-WebSocket-Extensions and
// Sec-WebSocket-Protocol are added when non-empty.
[[nodiscard]] std::string makeUpgradeRequest(std::string_view host, std::string_view target,
                                             std::string_view key, std::string_view extensions = {},
                                             std::string_view subprotocols = {});

// Client side: whether a response's Sec-WebSocket-Accept value matches the
// key sent.
[[nodiscard]] bool checkAcceptKey(std::string_view secWebSocketKey,
                                  std::string_view secWebSocketAccept);

}  // namespace libnet::ws
