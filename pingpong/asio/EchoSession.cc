#include "pingpong/asio/EchoSession.h"

#include <boost/asio/write.hpp>

namespace pingpong {
namespace {

// asio's own performance test sizes this buffer to the block size, but the
// server is not told the block size. 64 KiB is the most loopback TCP hands
// over per segment, so one async_read_some takes a whole 16 KiB message and
// anything queued behind it: one read system call per message, as in the
// other servers, and nothing smaller would help (the buffer is reused).
constexpr size_t kBufferSize = 64 * 1024;

}  // namespace

EchoSession::EchoSession(boost::asio::ip::tcp::socket socket)
    : socket_(std::move(socket)), buffer_(kBufferSize) {}

void EchoSession::start() {
  boost::system::error_code ec;
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  read();
}

void EchoSession::read() {
  socket_.async_read_some(boost::asio::buffer(buffer_),
                          [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                            // EOF or error: dropping `self` closes the socket.
                            if (!ec) self->write(n);
                          });
}

void EchoSession::write(size_t n) {
  boost::asio::async_write(socket_, boost::asio::buffer(buffer_.data(), n),
                           [self = shared_from_this()](boost::system::error_code ec, size_t) {
                             if (!ec) self->read();
                           });
}

}  // namespace pingpong
