// WebSocket client: connects to a ws:// or wss:// URL, makes the opening
// handshake and hands over a client-role WebSocket (net/websocket/
// WebSocket.h).
//
//   ws::connect(&loop, "wss://example.com/chat", {.caFile = "ca.pem"},
//               {.onOpen = [](const ws::WebSocketPtr& ws) { (void)ws->sendText("hi"); },
//                .onMessage = ..., .onClose = ...},
//               [](const std::string& why) { LOG_WARN << why; });
//
// The handshake: a fresh Sec-WebSocket-Key; the answer must be 101 with
// `Upgrade: websocket`, `upgrade` among the Connection tokens and the
// Sec-WebSocket-Accept of the key; an extension is accepted only if it is the
// permessage-deflate that was offered (ClientOptions::ws.deflate), with
// parameters the offer allows. Bytes the server sent right behind its 101 go
// to the WebSocket. wss:// is TLS with the server's certificate and name
// verified by default (caFile, verifyPeer). A host name is looked up through
// ClientOptions::resolver, or a dns::Resolver made for the attempt.
//
// Errors are values: onError gets one line saying why (the URL is refused,
// the connection is refused, the name does not resolve, the TLS handshake or
// certificate check failed, a status other than 101 such as "404 Not
// Found", a wrong accept key, an extension not offered, the connect or
// handshake timeout). Exactly one of onOpen (through handlers) and onError
// runs.
//
// Thread: call connect() on `loop`'s thread; every callback runs there.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/Duration.h"
#include "net/websocket/Options.h"
#include "net/websocket/WebSocket.h"

namespace libnet {
class EventLoop;
class NameResolver;
}  // namespace libnet

namespace libnet::ws {

struct ClientOptions {
  Options ws{};
  // wss: the CAs trusted to sign the server's certificate (PEM); empty: the
  // system's store. verifyPeer false skips every check (tests only).
  std::string caFile{};
  bool verifyPeer = true;
  // From connect() to the TCP (and TLS) connection being up.
  Duration connectTimeout = std::chrono::seconds(10);
  // From the connection being up to the server's 101.
  Duration handshakeTimeout = std::chrono::seconds(10);
  // For a host name; null: a dns::Resolver made for this connect.
  std::shared_ptr<NameResolver> resolver{};
  // The connection's output limit (TcpConnection::setMaxQueuedOutput).
  size_t maxQueuedOutput = 1024 * 1024;
};

using ErrorCallback = std::function<void(const std::string& reason)>;

// Throws std::invalid_argument for a URL that is not ws:// or wss:// (or is
// malformed) and for bad options; everything else is reported to onError.
void connect(EventLoop* loop, std::string_view url, const ClientOptions& options, Handlers handlers,
             ErrorCallback onError);

}  // namespace libnet::ws
