// TLS ping-pong echo server on Boost.Asio 1.74 (ssl::stream<tcp::socket> over
// OpenSSL 3): the peer that libnet's TLS ping-pong is measured against. The
// same design as asio_pingpong_server (one io_context per thread, connections
// assigned round-robin), with a TLS handshake before each echo loop.
//
// usage: asio_ssl_pingpong_server --tls-cert FILE --tls-key FILE <address> <port> <threads>
#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/Listen.h"
#include "pingpong/asio/SslEchoSession.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::ip::tcp;

constexpr const char* kProgram = "asio_ssl_pingpong_server";
constexpr const char* kUsageNote =
    "TLS: --tls-cert FILE --tls-key FILE (PEM chain and key; required, before or after the "
    "arguments).";

struct TlsOptions {
  std::string cert;
  std::string key;
};

[[noreturn]] void optionError(const std::string& message) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s --tls-cert FILE --tls-key FILE <address> <port> <threads>\n",
               kProgram, message.c_str(), kProgram);
  std::exit(pingpong::kExitUsage);
}

// Takes the --tls-* options (as "--opt FILE" or "--opt=FILE", anywhere on the
// line) out of argv, hands the rest to the shared positional parser.
pingpong::ServerArgs parseArgs(int argc, char** argv, TlsOptions& tls) {
  const pingpong::ProgramInfo info(kProgram, 256, kUsageNote);
  std::vector<char*> positional{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      (void)pingpong::parseServerArgs(argc, argv, info);  // prints usage, exits 0
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--")) {
      positional.push_back(argv[i]);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    std::string value;
    if (eq != std::string_view::npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--")) {
      value = argv[++i];
    }
    std::string* slot = nullptr;
    if (name == "--tls-cert") {
      slot = &tls.cert;
    } else if (name == "--tls-key") {
      slot = &tls.key;
    } else {
      optionError("unknown option: " + std::string(arg));
    }
    if (value.empty()) optionError("option " + std::string(name) + " needs a FILE");
    *slot = std::move(value);
  }
  const int count = static_cast<int>(positional.size());
  positional.push_back(nullptr);
  pingpong::ServerArgs args = pingpong::parseServerArgs(count, positional.data(), info);
  if (tls.cert.empty()) optionError("missing --tls-cert FILE");
  if (tls.key.empty()) optionError("missing --tls-key FILE");
  return args;
}

// OpenSSL 3 reports a missing or unreadable PEM file as a system-library
// error that asio can only call "asio.ssl error"; opening it first gives the
// errno text instead.
bool readable(const std::string& file, const char* what) {
  std::FILE* f = std::fopen(file.c_str(), "r");
  if (f == nullptr) {
    std::fprintf(stderr, "%s: cannot read %s %s: %s\n", kProgram, what, file.c_str(),
                 std::strerror(errno));
    return false;
  }
  std::fclose(f);
  return true;
}

// TLS 1.2 at least, OpenSSL's default ciphers and groups (so TLS 1.3 with
// AES-GCM when the client offers it, as libnet's TLS server does). False,
// after saying which file was bad, if the chain or key cannot be loaded.
bool configure(boost::asio::ssl::context& ssl, const TlsOptions& tls) {
  using boost::asio::ssl::context;
  ssl.set_options(context::no_sslv2 | context::no_sslv3 | context::no_tlsv1 | context::no_tlsv1_1);
  if (!readable(tls.cert, "certificate chain") || !readable(tls.key, "private key")) return false;
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

// As in asio_pingpong_server: the acceptor lives on context 0; each accepted
// socket is created directly on the next context in turn, so its handlers
// never run on another thread. The ssl::context is shared by all sessions
// (OpenSSL allows SSL objects made from one SSL_CTX on many threads).
void acceptNext(tcp::acceptor& acceptor, pingpong::IoContextPool& pool,
                boost::asio::ssl::context& ssl) {
  acceptor.async_accept(pool.next(), [&acceptor, &pool, &ssl](boost::system::error_code ec,
                                                              tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;  // shutting down
    if (!ec) {
      auto session = std::make_shared<pingpong::SslEchoSession>(std::move(socket), ssl);
      // start() touches the socket, so it runs on the socket's own context.
      boost::asio::post(session->socketExecutor(), [session] { session->start(); });
    } else {
      std::fprintf(stderr, "accept: %s\n", ec.message().c_str());
    }
    acceptNext(acceptor, pool, ssl);
  });
}

}  // namespace

int main(int argc, char** argv) {
  TlsOptions tls;
  const pingpong::ServerArgs args = parseArgs(argc, argv, tls);

  // Declared before the pool so that it outlives every session.
  boost::asio::ssl::context ssl(boost::asio::ssl::context::tls_server);
  if (!configure(ssl, tls)) return pingpong::kExitFailure;

  pingpong::IoContextPool pool(args.threads, /*keepAlive=*/true);
  boost::asio::io_context& main = pool.context(0);

  tcp::acceptor acceptor(main);
  if (!pingpong::listenOn(acceptor, args.endpoint, kProgram)) {
    return pingpong::kExitFailure;
  }

  boost::asio::signal_set signals(main, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    pool.stop();
  });

  acceptNext(acceptor, pool, ssl);
  std::printf(
      "listening on %s\n",
      pingpong::formatEndpoint(args.endpoint.address, acceptor.local_endpoint().port()).c_str());
  std::fflush(stdout);
  pool.run();
  return 0;
}
