// TlsLayer: TLS for a TcpServer or a TcpClient (ConnectionLayer): every
// connection gets a TlsConnectionIo over its backend's strategy, with one
// TlsContext. For a client, also the server's name to verify and send as SNI.
//
//   server.setConnectionLayer(std::make_shared<TlsLayer>(
//       TlsContext::newServer({.certChainFile = "cert.pem", .keyFile = "key.pem"})));
//   client.setConnectionLayer(std::make_shared<TlsLayer>(
//       TlsContext::newClient({.caFile = "ca.pem"}), "example.com"));
//
// Immutable; shared by every loop thread.
#pragma once

#include <memory>
#include <string>

#include "net/ConnectionLayer.h"
#include "net/tls/TlsContext.h"

namespace libnet {

class TlsLayer final : public ConnectionLayer {
 public:
  // `peerName`: a client's server name (DNS name or IP address), checked
  // against the server's certificate; throws std::invalid_argument if a
  // verifying client context has none. Ignored for a server context.
  explicit TlsLayer(std::shared_ptr<const TlsContext> context, std::string peerName = {});

  [[nodiscard]] ConnectionIo::Ptr newConnectionIo(EventLoop* loop,
                                                  const ConnectionIo::Parts& parts) const override;

  [[nodiscard]] const std::shared_ptr<const TlsContext>& context() const { return context_; }

 private:
  const std::shared_ptr<const TlsContext> context_;
  const std::string peerName_;
};

}  // namespace libnet
