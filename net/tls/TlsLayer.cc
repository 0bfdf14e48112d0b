#include "net/tls/TlsLayer.h"

#include <stdexcept>

#include "net/tls/TlsConnectionIo.h"

namespace libnet {

TlsLayer::TlsLayer(std::shared_ptr<const TlsContext> context, std::string peerName)
    : context_(std::move(context)), peerName_(std::move(peerName)) {
  if (!context_) throw std::invalid_argument("TlsLayer: no TLS context");
  if (!context_->isServer() && context_->verifiesPeer() && peerName_.empty()) {
    throw std::invalid_argument(
        "TlsLayer: a client that verifies the server needs the server's name (or an "
        "unverified context)");
  }
}

ConnectionIo::Ptr TlsLayer::newConnectionIo(EventLoop* loop,
                                            const ConnectionIo::Parts& parts) const {
  // On the heap, leaving the connection's room to the backend's strategy
  // that this one drives.
  return ConnectionIo::make<TlsConnectionIo>(nullptr, loop, parts, context_, peerName_);
}

}  // namespace libnet
