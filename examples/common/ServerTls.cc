#include "examples/common/ServerTls.h"

#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"

namespace libnet {

void ServerTls::addTo(Flags* flags) {
  flags->addFile("--tls-cert", &certFile_);
  flags->addFile("--tls-key", &keyFile_);
}

std::string ServerTls::check() const {
  if (certFile_.empty() != keyFile_.empty()) return "--tls-cert and --tls-key go together";
  return "";
}

std::shared_ptr<const ConnectionLayer> ServerTls::layer(std::vector<std::string> alpn) const {
  if (!enabled()) return nullptr;
  tls::Context::ServerOptions options;
  options.certChainFile = certFile_;
  options.keyFile = keyFile_;
  options.alpn = std::move(alpn);
  return tls::newLayer(tls::Context::newServer(options));
}

std::string ServerTls::kernelTlsNote() {
  return tls::Context::kernelTlsAvailable()
             ? "kTLS: the kernel offers it; files are still read and encrypted in user space"
             : "kTLS: not in this kernel (no tls ULP); files are read and encrypted in user space";
}

}  // namespace libnet
