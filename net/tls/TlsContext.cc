#include "net/tls/TlsContext.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fstream>
#include <stdexcept>
#include <utility>

namespace libnet::tls {

namespace {

std::vector<unsigned char> alpnWireFormat(const std::vector<std::string>& protocols) {
  std::vector<unsigned char> wire;
  for (const std::string& p : protocols) {
    if (p.empty() || p.size() > 255) {
      throw std::invalid_argument("TLS: bad ALPN protocol name '" + p + "' (1 to 255 bytes)");
    }
    wire.push_back(static_cast<unsigned char>(p.size()));
    wire.insert(wire.end(), p.begin(), p.end());
  }
  return wire;
}

void checkHandshakeTimeout(Duration timeout) {
  if (timeout < Duration::zero()) {
    throw std::invalid_argument("TLS: handshakeTimeout is negative");
  }
}

// A new SSL_CTX with what every libnet context has.
SSL_CTX* newBaseContext(bool server, Version minVersion, bool releaseIdleBuffers) {
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) throw Error("TLS: SSL_CTX_new: " + Context::takeErrors());
  const int min = minVersion == Version::kTls13 ? TLS1_3_VERSION : TLS1_2_VERSION;
  SSL_CTX_set_min_proto_version(ctx, min);
  // Renegotiation (TLS 1.2) is refused: it is a way to make a server spend
  // handshakes on one connection, and no client we serve needs it.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  if (releaseIdleBuffers) SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  return ctx;
}

// The server's ALPN choice: its own first preference that the client offered;
// a client offering none of them goes on without ALPN.
int selectAlpn(SSL*, const unsigned char** out, unsigned char* outLength, const unsigned char* in,
               unsigned int inLength, void* arg) {
  const auto* wire = static_cast<const std::vector<unsigned char>*>(arg);
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outLength, wire->data(), static_cast<unsigned>(wire->size()),
                            in, inLength) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

void loadCertificate(SSL_CTX* ctx, const std::string& chain, const std::string& key) {
  if (SSL_CTX_use_certificate_chain_file(ctx, chain.c_str()) != 1) {
    throw Error("TLS: cannot use certificate chain '" + chain + "': " + Context::takeErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw Error("TLS: cannot use private key '" + key + "' with certificate '" + chain +
                "': " + Context::takeErrors());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    throw Error("TLS: private key '" + key + "' does not match certificate '" + chain +
                "': " + Context::takeErrors());
  }
}

// Frees the SSL_CTX if construction throws before a Context owns it.
struct ContextGuard {
  SSL_CTX* ctx;
  ~ContextGuard() { SSL_CTX_free(ctx); }
  SSL_CTX* release() { return std::exchange(ctx, nullptr); }
};

}  // namespace

bool Context::kernelTlsAvailable() {
  // Lists the upper-layer protocols TCP can take; "tls" once the module is in.
  std::ifstream available("/proc/sys/net/ipv4/tcp_available_ulp");
  std::string name;
  while (available >> name) {
    if (name == "tls") return true;
  }
  return false;
}

std::string Context::takeErrors() {
  std::string text;
  while (const unsigned long e = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(e, line, sizeof line);
    if (!text.empty()) text += "; ";
    text += line;
  }
  return text;
}

Context::Context(SSL_CTX* ctx, bool server, bool verifyPeer, Duration handshakeTimeout,
                 std::vector<unsigned char> alpnWire)
    : ctx_(ctx),
      server_(server),
      verifyPeer_(verifyPeer),
      handshakeTimeout_(handshakeTimeout),
      alpnWire_(std::move(alpnWire)) {}

Context::~Context() { SSL_CTX_free(ctx_); }

void Context::enableServerAlpn() {
  if (alpnWire_.empty()) return;
  // The callback reads alpnWire_, which lives as long as the SSL_CTX.
  SSL_CTX_set_alpn_select_cb(ctx_, selectAlpn, const_cast<std::vector<unsigned char>*>(&alpnWire_));
}

std::shared_ptr<Context> Context::newServer(const ServerOptions& options) {
  if (options.certChainFile.empty() || options.keyFile.empty()) {
    throw std::invalid_argument("TLS: a server needs a certificate chain file and a key file");
  }
  checkHandshakeTimeout(options.handshakeTimeout);
  ERR_clear_error();
  ContextGuard guard{newBaseContext(true, options.minVersion, options.releaseIdleBuffers)};
  SSL_CTX* ctx = guard.ctx;
  loadCertificate(ctx, options.certChainFile, options.keyFile);
  // Resumed sessions (and client certificates with them) are only valid for
  // this application.
  static const unsigned char kSessionIdContext[] = "libnet";
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof kSessionIdContext - 1);
  if (options.sessionTickets) {
    // Tickets carry the session to the client: nothing to keep here. The
    // server-side cache would store every session under a lock and walk the
    // whole table every 255 handshakes, work that showed in the profile of
    // new connections (docs/benchmarks.md, "Figures formerly quoted in code
    // comments").
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  } else {
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
  }
  if (!options.clientCaFile.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, options.clientCaFile.c_str(), nullptr) != 1) {
      throw Error("TLS: cannot load client CA file '" + options.clientCaFile +
                  "': " + takeErrors());
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.clientCaFile.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  std::shared_ptr<Context> context(new Context(guard.release(), true, !options.clientCaFile.empty(),
                                               options.handshakeTimeout,
                                               alpnWireFormat(options.alpn)));
  context->enableServerAlpn();
  return context;
}

std::shared_ptr<Context> Context::newClient(const ClientOptions& options) {
  checkHandshakeTimeout(options.handshakeTimeout);
  ERR_clear_error();
  ContextGuard guard{newBaseContext(false, options.minVersion, options.releaseIdleBuffers)};
  SSL_CTX* ctx = guard.ctx;
  if (options.verifyPeer) {
    const bool loaded = options.caFile.empty() ? SSL_CTX_set_default_verify_paths(ctx) == 1
                                               : SSL_CTX_load_verify_locations(
                                                     ctx, options.caFile.c_str(), nullptr) == 1;
    if (!loaded) {
      throw Error("TLS: cannot load CA file '" +
                  (options.caFile.empty() ? std::string("(system store)") : options.caFile) +
                  "': " + takeErrors());
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!options.certChainFile.empty() || !options.keyFile.empty()) {
    loadCertificate(ctx, options.certChainFile, options.keyFile);
  }
  std::vector<unsigned char> alpn = alpnWireFormat(options.alpn);
  // SSL_CTX_set_alpn_protos returns 0 on success.
  if (!alpn.empty() &&
      SSL_CTX_set_alpn_protos(ctx, alpn.data(), static_cast<unsigned>(alpn.size())) != 0) {
    throw Error("TLS: cannot set ALPN protocols: " + takeErrors());
  }
  return std::shared_ptr<Context>(new Context(guard.release(), false, options.verifyPeer,
                                              options.handshakeTimeout, std::move(alpn)));
}

}  // namespace libnet::tls
