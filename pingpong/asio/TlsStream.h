// TlsStream: the stream of the asio TLS ping-pong peers, ssl::stream<tcp::socket>
// over OpenSSL 3 (from Debian), and what PingSession and EchoSession need to
// run over it: its StreamTraits (the two handshakes, and failure text that
// says which certificate check failed) and the client's stream, which checks
// the server's certificate against the address it was asked to reach.
//
// A TlsStream is owned by the session it is moved into; the ssl::context it
// was made from must outlive it. Everything here runs on the thread that runs
// the stream's io_context, except makeClientStream(), which only builds.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/system/error_code.hpp>
#include <string>
#include <utility>

#include "pingpong/asio/StreamTraits.h"

namespace pingpong {

using TlsStream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

// A client stream on `context` whose handshake checks the server's
// certificate: its chain against the CA of `tls` (which must verify_peer) and
// its subjectAltName against `host`, an IP address or a DNS name.
[[nodiscard]] TlsStream makeClientStream(boost::asio::io_context& context,
                                         boost::asio::ssl::context& tls, const std::string& host);

template <>
struct StreamTraits<TlsStream> {
  // Handshakes as the server, then calls `ready`. A failed handshake (a port
  // scan, a client that rejected our certificate, a plain-TCP client) prints
  // one line and drops `ready`, and with it the session and its socket.
  template <typename Ready>
  static void serverHandshake(TlsStream& stream, Ready&& ready) {
    stream.async_handshake(
        boost::asio::ssl::stream_base::server,
        [ready = std::forward<Ready>(ready)](boost::system::error_code ec) mutable {
          if (ec) {
            reportServerHandshakeFailure(ec);
            return;
          }
          ready();
        });
  }

  // Handshakes as the client; `done` gets the handshake's error code.
  template <typename Done>
  static void clientHandshake(TlsStream& stream, Done&& done) {
    stream.async_handshake(boost::asio::ssl::stream_base::client, std::forward<Done>(done));
  }

  // The error's text and, for a rejected certificate, which check failed.
  [[nodiscard]] static std::string describe(TlsStream& stream, const boost::system::error_code& ec);

 private:
  static void reportServerHandshakeFailure(const boost::system::error_code& ec);
};

}  // namespace pingpong
