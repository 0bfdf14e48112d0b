#include "pingpong/asio/SslPingSession.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>

namespace pingpong {
namespace {

// As in PingSession: at least 64 KiB. An ssl::stream read returns at most
// one TLS record (16 KiB of plaintext) whatever the buffer, so this only has
// to hold a block.
constexpr size_t kMinBufferSize = 64 * 1024;

}  // namespace

SslPingSession::SslPingSession(boost::asio::io_context& context, boost::asio::ssl::context& tls,
                               SessionStats& stats, size_t blocksize, const std::string& host)
    : stream_(context, tls),
      stats_(stats),
      buffer_(std::max(blocksize, kMinBufferSize)),
      blocksize_(blocksize) {
  // host_name_verification checks an IP address against the certificate's
  // IP subjectAltNames (X509_check_ip_asc) and a name against its DNS ones;
  // the chain itself is checked by verify_peer on the context. When only the
  // name check fails it leaves the error at X509_V_OK, which OpenSSL then
  // reports as "unspecified certificate verification error"; naming the
  // mismatch makes a wrong address obvious.
  boost::system::error_code notAnAddress;
  (void)boost::asio::ip::make_address(host, notAnAddress);
  const int mismatch = notAnAddress ? X509_V_ERR_HOSTNAME_MISMATCH : X509_V_ERR_IP_ADDRESS_MISMATCH;
  stream_.set_verify_callback(
      [check = boost::asio::ssl::host_name_verification(host), mismatch](
          bool preverified, boost::asio::ssl::verify_context& ctx) {
        if (check(preverified, ctx)) return true;
        X509_STORE_CTX* store = ctx.native_handle();
        if (X509_STORE_CTX_get_error(store) == X509_V_OK) X509_STORE_CTX_set_error(store, mismatch);
        return false;
      });
  for (size_t i = 0; i < blocksize_; ++i) buffer_[i] = static_cast<char>(i % 128);
}

void SslPingSession::connect(const boost::asio::ip::tcp::endpoint& endpoint) {
  stream_.lowest_layer().connect(endpoint);
  stream_.lowest_layer().set_option(boost::asio::ip::tcp::no_delay(true));
}

void SslPingSession::handshake(HandshakeDone done) {
  stream_.async_handshake(
      boost::asio::ssl::stream_base::client,
      [self = shared_from_this(), done = std::move(done)](boost::system::error_code ec) {
        done(ec ? self->describe(ec) : std::string());
      });
}

void SslPingSession::start() { write(blocksize_); }

void SslPingSession::stop() {
  stopped_ = true;
  boost::system::error_code ignored;
  stream_.lowest_layer().close(ignored);
}

void SslPingSession::read() {
  stream_.async_read_some(boost::asio::buffer(buffer_),
                          [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                            if (self->stopped_) return;
                            if (ec) {
                              self->fail(ec);
                              return;
                            }
                            self->stats_.bytes += static_cast<int64_t>(n);
                            ++self->stats_.messages;
                            self->write(n);
                          });
}

void SslPingSession::write(size_t n) {
  boost::asio::async_write(stream_, boost::asio::buffer(buffer_.data(), n),
                           [self = shared_from_this()](boost::system::error_code ec, size_t) {
                             if (self->stopped_) return;
                             if (ec) {
                               self->fail(ec);
                               return;
                             }
                             self->read();
                           });
}

void SslPingSession::fail(const boost::system::error_code& ec) {
  if (stats_.error.empty()) stats_.error = describe(ec);
  stopped_ = true;
  boost::system::error_code ignored;
  stream_.lowest_layer().close(ignored);
}

std::string SslPingSession::describe(const boost::system::error_code& ec) {
  std::string text = ec.message();
  // OpenSSL reports every rejected certificate as "certificate verify
  // failed"; the verify result says which check it was (unknown issuer,
  // expired, host mismatch).
  const long verify = SSL_get_verify_result(stream_.native_handle());
  if (verify != X509_V_OK) {
    text += " (";
    text += X509_verify_cert_error_string(verify);
    text += ")";
  }
  return text;
}

}  // namespace pingpong
