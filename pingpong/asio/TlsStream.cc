#include "pingpong/asio/TlsStream.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <cstdio>

namespace pingpong {

TlsStream makeClientStream(boost::asio::io_context& context, boost::asio::ssl::context& tls,
                           const std::string& host) {
  TlsStream stream(context, tls);
  // host_name_verification checks an IP address against the certificate's
  // IP subjectAltNames (X509_check_ip_asc) and a name against its DNS ones;
  // the chain itself is checked by verify_peer on the context. When only the
  // name check fails it leaves the error at X509_V_OK, which OpenSSL then
  // reports as "unspecified certificate verification error"; naming the
  // mismatch makes a wrong address obvious. The callback lives in the SSL
  // object, so it moves with the stream.
  boost::system::error_code notAnAddress;
  (void)boost::asio::ip::make_address(host, notAnAddress);
  const int mismatch = notAnAddress ? X509_V_ERR_HOSTNAME_MISMATCH : X509_V_ERR_IP_ADDRESS_MISMATCH;
  stream.set_verify_callback([check = boost::asio::ssl::host_name_verification(host), mismatch](
                                 bool preverified, boost::asio::ssl::verify_context& ctx) {
    if (check(preverified, ctx)) return true;
    X509_STORE_CTX* store = ctx.native_handle();
    if (X509_STORE_CTX_get_error(store) == X509_V_OK) X509_STORE_CTX_set_error(store, mismatch);
    return false;
  });
  return stream;
}

std::string StreamTraits<TlsStream>::describe(TlsStream& stream,
                                              const boost::system::error_code& ec) {
  std::string text = ec.message();
  // OpenSSL reports every rejected certificate as "certificate verify
  // failed"; the verify result says which check it was (unknown issuer,
  // expired, host mismatch).
  const long verify = SSL_get_verify_result(stream.native_handle());
  if (verify != X509_V_OK) {
    text += " (";
    text += X509_verify_cert_error_string(verify);
    text += ")";
  }
  return text;
}

void StreamTraits<TlsStream>::reportServerHandshakeFailure(const boost::system::error_code& ec) {
  // Only the TLS server handshakes as a server, so the line carries its name.
  std::fprintf(stderr, "asio_ssl_pingpong_server: TLS handshake: %s\n", ec.message().c_str());
}

}  // namespace pingpong
