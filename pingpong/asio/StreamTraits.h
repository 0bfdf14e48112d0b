// StreamTraits<Stream>: the little that PingSession and EchoSession do
// differently over a plain socket and over TLS, so that one template of each
// serves both. Everything else they need (reads, writes, the lowest layer's
// connect, set_option and close) asio spells the same for tcp::socket and
// ssl::stream<tcp::socket>. This file holds the plain socket's traits; the TLS
// ones are in TlsStream.h, so that the plain programs need no OpenSSL.
//
// Static functions only, no state; each is called on the thread that runs the
// stream's io_context.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <string>
#include <utility>

namespace pingpong {

template <typename Stream>
struct StreamTraits;

template <>
struct StreamTraits<boost::asio::ip::tcp::socket> {
  // A plain socket has nothing to negotiate: the server session starts
  // reading at once, and a client's `done` runs at once with success.
  template <typename Ready>
  static void serverHandshake(boost::asio::ip::tcp::socket&, Ready&& ready) {
    std::forward<Ready>(ready)();
  }
  template <typename Done>
  static void clientHandshake(boost::asio::ip::tcp::socket&, Done&& done) {
    std::forward<Done>(done)(boost::system::error_code());
  }

  // The text a client reports for a failed connection.
  [[nodiscard]] static std::string describe(boost::asio::ip::tcp::socket&,
                                            const boost::system::error_code& ec) {
    return ec.message();
  }
};

}  // namespace pingpong
