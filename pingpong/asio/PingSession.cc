#include "pingpong/asio/PingSession.h"

#include <algorithm>
#include <boost/asio/write.hpp>

namespace pingpong {
namespace {

// asio's test reads into a block-sized buffer. At least 64 KiB here (the most
// loopback TCP delivers per segment) so that when a message arrives in
// pieces, or two arrive together, one read still takes everything available:
// messages are unframed, so a larger buffer changes only the number of reads.
constexpr size_t kMinBufferSize = 64 * 1024;

}  // namespace

PingSession::PingSession(boost::asio::io_context& context, SessionStats& stats, size_t blocksize)
    : socket_(context),
      stats_(stats),
      buffer_(std::max(blocksize, kMinBufferSize)),
      blocksize_(blocksize) {
  for (size_t i = 0; i < blocksize_; ++i) buffer_[i] = static_cast<char>(i % 128);
}

void PingSession::connect(const boost::asio::ip::tcp::endpoint& endpoint) {
  socket_.connect(endpoint);
  socket_.set_option(boost::asio::ip::tcp::no_delay(true));
}

void PingSession::start() { write(blocksize_); }

void PingSession::stop() {
  stopped_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void PingSession::read() {
  socket_.async_read_some(boost::asio::buffer(buffer_),
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

void PingSession::write(size_t n) {
  boost::asio::async_write(socket_, boost::asio::buffer(buffer_.data(), n),
                           [self = shared_from_this()](boost::system::error_code ec, size_t) {
                             if (self->stopped_) return;
                             if (ec) {
                               self->fail(ec);
                               return;
                             }
                             self->read();
                           });
}

void PingSession::fail(const boost::system::error_code& ec) {
  if (stats_.error.empty()) stats_.error = ec.message();
  stopped_ = true;
  boost::system::error_code ignored;
  socket_.close(ignored);
}

}  // namespace pingpong
