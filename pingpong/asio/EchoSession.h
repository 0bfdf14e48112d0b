// EchoSession<Stream>: one server-side connection of the asio ping-pong
// servers, over a plain tcp::socket (asio_pingpong_server) or a TlsStream
// (asio_ssl_pingpong_server): the usual asio echo session (async_read_some,
// async_write what was read, read again), after the server handshake when
// the stream has one. What differs between the two streams is in
// StreamTraits<Stream>. acceptEchoSessions() is the accept loop that makes
// them.
//
// Owned by the shared_ptrs its pending handlers hold, so it lives exactly as
// long as an operation is outstanding and dies with the last one; the
// ssl::context a TlsStream was made from must outlive it. Runs only on the
// io_context its socket belongs to.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/StreamTraits.h"

namespace pingpong {

template <typename Stream>
class EchoSession : public std::enable_shared_from_this<EchoSession<Stream>> {
 public:
  // `stream`: accepted, not yet used.
  explicit EchoSession(Stream stream);
  EchoSession(const EchoSession&) = delete;
  EchoSession& operator=(const EchoSession&) = delete;

  // Sets TCP_NODELAY, handshakes if the stream does, then echoes; call on
  // the socket's context.
  void start();

  [[nodiscard]] boost::asio::ip::tcp::socket::executor_type socketExecutor() {
    return stream_.lowest_layer().get_executor();
  }

 private:
  // asio's own performance test sizes this buffer to the block size, but the
  // server is not told the block size. 64 KiB is the most loopback TCP hands
  // over per segment, so one async_read_some takes a whole 16 KiB message and
  // anything queued behind it: one read system call per message, as in the
  // other servers, and nothing smaller would help (the buffer is reused).
  // The TLS server uses the same size, so that the two differ only in TLS:
  // an ssl::stream read returns at most one TLS record (16 KiB of
  // plaintext), so there this size does not set how many reads a message
  // takes; it only has to hold a record.
  static constexpr size_t kBufferSize = 64 * 1024;

  void read();
  void write(size_t n);

  Stream stream_;
  std::vector<char> buffer_;
};

template <typename Stream>
EchoSession<Stream>::EchoSession(Stream stream)
    : stream_(std::move(stream)), buffer_(kBufferSize) {}

template <typename Stream>
void EchoSession<Stream>::start() {
  boost::system::error_code ec;
  stream_.lowest_layer().set_option(boost::asio::ip::tcp::no_delay(true), ec);
  StreamTraits<Stream>::serverHandshake(stream_,
                                        [self = this->shared_from_this()] { self->read(); });
}

template <typename Stream>
void EchoSession<Stream>::read() {
  stream_.async_read_some(
      boost::asio::buffer(buffer_),
      [self = this->shared_from_this()](boost::system::error_code ec, size_t n) {
        // EOF, a truncated TLS stream (the client closes without close_notify)
        // or an error: dropping `self` closes the socket.
        if (!ec) self->write(n);
      });
}

template <typename Stream>
void EchoSession<Stream>::write(size_t n) {
  boost::asio::async_write(stream_, boost::asio::buffer(buffer_.data(), n),
                           [self = this->shared_from_this()](boost::system::error_code ec, size_t) {
                             if (!ec) self->read();
                           });
}

// Accepts connections on `acceptor` (which lives on context 0 of `pool`) until
// it is closed, each one an EchoSession over makeStream(socket). Each socket
// is created directly on the next context in turn, so its handlers never run
// on another thread. `makeStream` is copied from one accept to the next; what
// it refers to must outlive the acceptor's context.
template <typename MakeStream>
void acceptEchoSessions(boost::asio::ip::tcp::acceptor& acceptor, IoContextPool& pool,
                        MakeStream makeStream) {
  using Stream = std::invoke_result_t<MakeStream&, boost::asio::ip::tcp::socket>;
  acceptor.async_accept(
      pool.next(), [&acceptor, &pool, makeStream](boost::system::error_code ec,
                                                  boost::asio::ip::tcp::socket socket) {
        if (ec == boost::asio::error::operation_aborted) return;  // shutting down
        if (!ec) {
          auto session = std::make_shared<EchoSession<Stream>>(makeStream(std::move(socket)));
          // start() touches the socket, so it runs on the socket's own context.
          boost::asio::post(session->socketExecutor(), [session] { session->start(); });
        } else {
          std::fprintf(stderr, "accept: %s\n", ec.message().c_str());
        }
        acceptEchoSessions(acceptor, pool, makeStream);
      });
}

}  // namespace pingpong
