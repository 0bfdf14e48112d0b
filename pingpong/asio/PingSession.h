// PingSession<Stream>: one client-side connection of the asio ping-pong
// clients, over a plain tcp::socket (asio_pingpong_client) or a TlsStream
// (asio_ssl_pingpong_client). After a blocking TCP connect and, for TLS, an
// asynchronous client handshake, it sends one block when started, then
// echoes whatever it receives, counting bytes and read completions into the
// SessionStats of its thread. What differs between the two streams is in
// StreamTraits<Stream>.
//
// Held by the client's per-thread list and by its pending handlers; the
// ssl::context a TlsStream was made from must outlive it. Everything after
// connect() runs on the io_context its socket belongs to.
#pragma once

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pingpong/asio/SessionStats.h"
#include "pingpong/asio/StreamTraits.h"

namespace pingpong {

template <typename Stream>
class PingSession : public std::enable_shared_from_this<PingSession<Stream>> {
 public:
  // Called once the handshake ends; `error` is empty on success, otherwise
  // says why (for a rejected certificate, which check failed).
  using HandshakeDone = std::function<void(const std::string& error)>;

  // `stream`: not connected yet (a TLS one as makeClientStream() makes it).
  PingSession(Stream stream, SessionStats& stats, size_t blocksize);
  PingSession(const PingSession&) = delete;
  PingSession& operator=(const PingSession&) = delete;

  // Blocking TCP connect, done before the clock starts; throws
  // boost::system::system_error.
  void connect(const boost::asio::ip::tcp::endpoint& endpoint);
  // Starts the TLS handshake, also before the clock (over a plain socket
  // `done` runs at once); call on the socket's context.
  void handshake(HandshakeDone done);
  // Sends the first block; call on the socket's context.
  void start();
  // Stops counting and closes the socket (over TLS without close_notify: the
  // run is over, and the server only drops the connection); pending handlers
  // then complete with operation_aborted. Call on the socket's context.
  void stop();

 private:
  // asio's test reads into a block-sized buffer. At least 64 KiB here (the
  // most loopback TCP delivers per segment) so that when a message arrives
  // in pieces, or two arrive together, one read still takes everything
  // available: messages are unframed, so a larger buffer changes only the
  // number of reads. An ssl::stream read returns at most one TLS record
  // (16 KiB of plaintext) whatever the buffer, so over TLS this only has to
  // hold a block.
  static constexpr size_t kMinBufferSize = 64 * 1024;

  void read();
  void write(size_t n);
  void fail(const boost::system::error_code& ec);

  Stream stream_;
  SessionStats& stats_;
  std::vector<char> buffer_;
  size_t blocksize_;
  bool stopped_ = false;
};

template <typename Stream>
PingSession<Stream>::PingSession(Stream stream, SessionStats& stats, size_t blocksize)
    : stream_(std::move(stream)),
      stats_(stats),
      buffer_(std::max(blocksize, kMinBufferSize)),
      blocksize_(blocksize) {
  for (size_t i = 0; i < blocksize_; ++i) buffer_[i] = static_cast<char>(i % 128);
}

template <typename Stream>
void PingSession<Stream>::connect(const boost::asio::ip::tcp::endpoint& endpoint) {
  stream_.lowest_layer().connect(endpoint);
  stream_.lowest_layer().set_option(boost::asio::ip::tcp::no_delay(true));
}

template <typename Stream>
void PingSession<Stream>::handshake(HandshakeDone done) {
  StreamTraits<Stream>::clientHandshake(
      stream_,
      [self = this->shared_from_this(), done = std::move(done)](boost::system::error_code ec) {
        done(ec ? StreamTraits<Stream>::describe(self->stream_, ec) : std::string());
      });
}

template <typename Stream>
void PingSession<Stream>::start() {
  write(blocksize_);
}

template <typename Stream>
void PingSession<Stream>::stop() {
  stopped_ = true;
  boost::system::error_code ignored;
  stream_.lowest_layer().close(ignored);
}

template <typename Stream>
void PingSession<Stream>::read() {
  stream_.async_read_some(
      boost::asio::buffer(buffer_),
      [self = this->shared_from_this()](boost::system::error_code ec, size_t n) {
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

template <typename Stream>
void PingSession<Stream>::write(size_t n) {
  boost::asio::async_write(stream_, boost::asio::buffer(buffer_.data(), n),
                           [self = this->shared_from_this()](boost::system::error_code ec, size_t) {
                             if (self->stopped_) return;
                             if (ec) {
                               self->fail(ec);
                               return;
                             }
                             self->read();
                           });
}

template <typename Stream>
void PingSession<Stream>::fail(const boost::system::error_code& ec) {
  if (stats_.error.empty()) stats_.error = StreamTraits<Stream>::describe(stream_, ec);
  stop();
}

}  // namespace pingpong
