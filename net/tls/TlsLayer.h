// TLS for a TcpServer, a TcpClient or an HttpServer: the ConnectionLayer that
// gives every connection a TlsConnectionIo over its backend's strategy, with
// one tls::Context. For a client, also the server's name to verify and send
// as SNI.
//
//   TcpServer server(loop, addr, "tls-echo", {.layer = tls::newLayer(
//       tls::Context::newServer({.certChainFile = "cert.pem", .keyFile = "key.pem"}))});
//   TcpClient client(loop, addr, "client", {.layer = tls::newLayer(
//       tls::Context::newClient({.caFile = "ca.pem"}), "example.com")});
//
// The layer is opaque here: this header brings in neither ConnectionLayer's
// definition nor the I/O strategy interface behind it. Immutable; shared by
// every loop thread.
#pragma once

#include <memory>
#include <string>

namespace libnet {
class ConnectionLayer;
}  // namespace libnet

namespace libnet::tls {

class Context;

// `peerName`: a client's server name (DNS name or IP address), checked
// against the server's certificate; ignored for a server context. Throws
// std::invalid_argument without a context, or for a verifying client
// context without a peer name.
[[nodiscard]] std::shared_ptr<const ConnectionLayer> newLayer(
    std::shared_ptr<const Context> context, std::string peerName = {});

}  // namespace libnet::tls
