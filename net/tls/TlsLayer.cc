#include "net/tls/TlsLayer.h"

#include <stdexcept>
#include <utility>

#include "net/ConnectionLayer.h"
#include "net/tls/TlsConnectionIo.h"
#include "net/tls/TlsContext.h"

namespace libnet::tls {

namespace {

class Layer final : public ConnectionLayer {
 public:
  Layer(std::shared_ptr<const Context> context, std::string peerName)
      : context_(std::move(context)), peerName_(std::move(peerName)) {}

  [[nodiscard]] ConnectionIo::Ptr newConnectionIo(EventLoop* loop,
                                                  const ConnectionIo::Parts& parts) const override {
    // On the heap, leaving the connection's room to the backend's strategy
    // that this one drives.
    return ConnectionIo::make<TlsConnectionIo>(nullptr, loop, parts, context_, peerName_);
  }

 private:
  const std::shared_ptr<const Context> context_;
  const std::string peerName_;
};

}  // namespace

std::shared_ptr<const ConnectionLayer> newLayer(std::shared_ptr<const Context> context,
                                                std::string peerName) {
  if (!context) throw std::invalid_argument("tls::newLayer: no TLS context");
  if (!context->isServer() && context->verifiesPeer() && peerName.empty()) {
    throw std::invalid_argument(
        "tls::newLayer: a client that verifies the server needs the server's name (or an "
        "unverified context)");
  }
  return std::make_shared<const Layer>(std::move(context), std::move(peerName));
}

}  // namespace libnet::tls
