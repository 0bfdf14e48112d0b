// TLS ping-pong echo server on Boost.Asio 1.74 (ssl::stream<tcp::socket> over
// OpenSSL 3): the peer that libnet's TLS ping-pong is measured against. The
// same design as asio_pingpong_server (one io_context per thread, connections
// assigned round-robin), with a TLS handshake before each echo loop.
//
// usage: asio_ssl_pingpong_server --tls-cert FILE --tls-key FILE <address> <port> <threads>
#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdio>
#include <string>
#include <utility>

#include "pingpong/asio/EchoSession.h"
#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/RunServer.h"
#include "pingpong/asio/SslOptions.h"
#include "pingpong/asio/TlsStream.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::ip::tcp;

constexpr const char* kProgram = "asio_ssl_pingpong_server";

// TLS 1.2 at least, OpenSSL's default ciphers and groups (so TLS 1.3 with
// AES-GCM when the client offers it, as libnet's TLS server does). False,
// after saying which file was bad, if the chain or key cannot be loaded.
bool configure(boost::asio::ssl::context& ssl, const pingpong::SslOptions& tls) {
  using boost::asio::ssl::context;
  ssl.set_options(context::no_sslv2 | context::no_sslv3 | context::no_tlsv1 | context::no_tlsv1_1);
  if (!pingpong::readable(kProgram, tls.cert, "certificate chain") ||
      !pingpong::readable(kProgram, tls.key, "private key")) {
    return false;
  }
  const char* what = "certificate chain";
  const std::string* file = &tls.cert;
  try {
    ssl.use_certificate_chain_file(tls.cert);
    what = "private key";
    file = &tls.key;
    ssl.use_private_key_file(tls.key, context::pem);
    if (SSL_CTX_check_private_key(ssl.native_handle()) != 1) {
      std::fprintf(stderr, "%s: private key %s does not match certificate %s\n", kProgram,
                   tls.key.c_str(), tls.cert.c_str());
      return false;
    }
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "%s: cannot load %s %s: %s\n", kProgram, what, file->c_str(),
                 e.code().message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  pingpong::SslOptions tls;
  const pingpong::ServerArgs args = pingpong::parseSslServerArgs(argc, argv, kProgram, tls);

  // Declared before the pool (in runServer) so that it outlives every
  // session. It is shared by all of them: OpenSSL allows SSL objects made
  // from one SSL_CTX on many threads.
  boost::asio::ssl::context ssl(boost::asio::ssl::context::tls_server);
  if (!configure(ssl, tls)) return pingpong::kExitFailure;

  return pingpong::runServer(
      kProgram, args, [&ssl](tcp::acceptor& acceptor, pingpong::IoContextPool& pool) {
        pingpong::acceptEchoSessions(acceptor, pool, [&ssl](tcp::socket socket) {
          return pingpong::TlsStream(std::move(socket), ssl);
        });
      });
}
