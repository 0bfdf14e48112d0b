// tls::Context: the settings every TLS connection of one side shares: for a
// server, its certificate chain and key (and, optionally, the CA that client
// certificates must chain to); for a client, the CAs it trusts (a file, or
// the system's store) and whether it verifies the server at all (it does
// unless told otherwise). Wraps one OpenSSL 3 SSL_CTX.
//
// Made once, before the server or client starts, by newServer() /
// newClient(), from their options: a bad value (a server without a
// certificate, an ALPN name that is empty or over 255 bytes, a negative
// handshake timeout) throws std::invalid_argument, a file OpenSSL cannot use
// throws tls::Error with OpenSSL's reason. Immutable afterwards, so one context may be shared by
// any number of connections on any number of loop threads (OpenSSL makes SSL objects from one
// SSL_CTX concurrently). Held by std::shared_ptr: every connection keeps its context alive.
//
// What is always on: TLS 1.2 and 1.3 only (no SSL 3, TLS 1.0 or 1.1),
// renegotiation refused, OpenSSL's default cipher lists. See docs/tls.md for
// the threat model and every default.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/Duration.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace libnet::tls {

// A TLS context could not be made (an unreadable certificate, a key that does
// not match it, a CA file OpenSSL cannot load); what() says which and
// OpenSSL's reason.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Version { kTls12, kTls13 };

class Context {
 public:
  static constexpr Duration kDefaultHandshakeTimeout = std::chrono::seconds(10);

  struct ServerOptions {
    std::string certChainFile{};  // PEM: the server's certificate, then its chain
    std::string keyFile{};        // PEM: the private key of that certificate
    // Non-empty: clients must present a certificate that chains to a CA in
    // this PEM file (mutual TLS); the handshake fails otherwise.
    std::string clientCaFile{};
    // ALPN protocols offered, in order of preference ("http/1.1"); a client
    // offering none of them still connects, without ALPN.
    std::vector<std::string> alpn{};
    bool sessionTickets = true;  // resumption by session ticket
    Version minVersion = Version::kTls12;
    // A connection whose handshake has not completed this long after it was
    // accepted is closed; zero: no limit (the idle timeout still applies).
    // Not negative.
    Duration handshakeTimeout = kDefaultHandshakeTimeout;
    // OpenSSL's 16 KiB+ read and write buffers go back to the heap whenever
    // they are empty, so an idle connection holds neither (docs/benchmarks.md,
    // "Memory per idle TLS connection"); off keeps them, trading memory for
    // an allocation less per record.
    bool releaseIdleBuffers = true;
  };

  struct ClientOptions {
    // PEM file of the CAs trusted to sign servers' certificates; empty: the
    // system's store (/etc/ssl/certs).
    std::string caFile{};
    // Off: the server's certificate and name are not checked at all (tests,
    // pinned peers); never the default.
    bool verifyPeer = true;
    // A certificate and key to present when the server asks (mutual TLS).
    std::string certChainFile{};
    std::string keyFile{};
    std::vector<std::string> alpn{};  // protocols offered, in order
    Version minVersion = Version::kTls12;
    Duration handshakeTimeout = kDefaultHandshakeTimeout;
    bool releaseIdleBuffers = true;  // as for a server
  };

  [[nodiscard]] static std::shared_ptr<Context> newServer(const ServerOptions& options);
  [[nodiscard]] static std::shared_ptr<Context> newClient(const ClientOptions& options);

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  [[nodiscard]] bool isServer() const { return server_; }
  [[nodiscard]] bool verifiesPeer() const { return verifyPeer_; }
  [[nodiscard]] Duration handshakeTimeout() const { return handshakeTimeout_; }
  // For settings this class does not cover; change nothing once connections
  // are being made.
  [[nodiscard]] ssl_ctx_st* native() const { return ctx_; }

  // Whether this kernel offers kernel TLS (a "tls" upper-layer protocol for
  // TCP). libnet does not use it yet: see docs/tls.md.
  [[nodiscard]] static bool kernelTlsAvailable();

  // OpenSSL's pending errors on this thread, as one line ("" if none),
  // clearing them.
  [[nodiscard]] static std::string takeErrors();

 private:
  Context(ssl_ctx_st* ctx, bool server, bool verifyPeer, Duration handshakeTimeout,
          std::vector<unsigned char> alpnWire);
  void enableServerAlpn();

  ssl_ctx_st* ctx_;
  const bool server_;
  const bool verifyPeer_;
  const Duration handshakeTimeout_;
  // ALPN protocols in wire format (length-prefixed), for the server's
  // selection callback.
  const std::vector<unsigned char> alpnWire_;
};

}  // namespace libnet::tls

namespace libnet {
// The names of 0.1, kept for one minor version (CHANGELOG.md).
using TlsContext [[deprecated("use tls::Context")]] = tls::Context;
using TlsError [[deprecated("use tls::Error")]] = tls::Error;
using TlsVersion [[deprecated("use tls::Version")]] = tls::Version;
}  // namespace libnet
