#include "pingpong/asio/SslEchoSession.h"

#include <boost/asio/write.hpp>
#include <cstdio>

namespace pingpong {
namespace {

// The same 64 KiB as EchoSession, so that the two servers differ only in
// TLS. An ssl::stream read returns at most one TLS record (16 KiB of
// plaintext), so with TLS this size does not set how many reads a message
// takes; it only has to hold a record.
constexpr size_t kBufferSize = 64 * 1024;

}  // namespace

SslEchoSession::SslEchoSession(boost::asio::ip::tcp::socket socket,
                               boost::asio::ssl::context& context)
    : stream_(std::move(socket), context), buffer_(kBufferSize) {}

void SslEchoSession::start() {
  boost::system::error_code ec;
  stream_.lowest_layer().set_option(boost::asio::ip::tcp::no_delay(true), ec);
  stream_.async_handshake(boost::asio::ssl::stream_base::server,
                          [self = shared_from_this()](boost::system::error_code ec) {
                            if (ec) {
                              // A port scan, a client that rejected our
                              // certificate, a plain-TCP client: one line,
                              // and dropping `self` closes the socket.
                              std::fprintf(stderr, "asio_ssl_pingpong_server: TLS handshake: %s\n",
                                           ec.message().c_str());
                              return;
                            }
                            self->read();
                          });
}

void SslEchoSession::read() {
  stream_.async_read_some(boost::asio::buffer(buffer_),
                          [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                            // EOF, a truncated stream (the client closes
                            // without close_notify) or an error: dropping
                            // `self` closes the socket.
                            if (!ec) self->write(n);
                          });
}

void SslEchoSession::write(size_t n) {
  boost::asio::async_write(stream_, boost::asio::buffer(buffer_.data(), n),
                           [self = shared_from_this()](boost::system::error_code ec, size_t) {
                             if (!ec) self->read();
                           });
}

}  // namespace pingpong
