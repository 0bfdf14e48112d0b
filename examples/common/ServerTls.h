// ServerTls: the --tls-cert / --tls-key options of the example servers, and
// the TLS layer they ask for. Both options together turn TLS on; one without
// the other is a usage error.
//
// Single-threaded use, from main() before the server starts.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "examples/common/Flags.h"
#include "net/ConnectionLayer.h"

namespace libnet {

class ServerTls {
 public:
  static constexpr const char* kUsage =
      "  --tls-cert FILE  serve TLS (1.2/1.3) with this PEM certificate chain\n"
      "  --tls-key FILE   ... and this PEM private key (both or neither)\n";

  void addTo(Flags* flags);
  [[nodiscard]] bool enabled() const { return !certFile_.empty() || !keyFile_.empty(); }
  // "" if the options make sense together, else why not.
  [[nodiscard]] std::string check() const;
  // The layer for TcpServer::Options::layer (null when TLS is off); throws
  // tls::Error with OpenSSL's reason when the files cannot be used.
  [[nodiscard]] std::shared_ptr<const ConnectionLayer> layer(
      std::vector<std::string> alpn = {}) const;
  // One line for the start-up banner: whether the kernel offers kTLS here.
  [[nodiscard]] static std::string kernelTlsNote();

 private:
  std::string certFile_;
  std::string keyFile_;
};

}  // namespace libnet
