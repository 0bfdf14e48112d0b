// One server-side connection of the asio TLS ping-pong server: the TLS twin
// of EchoSession. It completes the server handshake on an
// ssl::stream<tcp::socket>, then runs the same echo loop (async_read_some,
// async_write what was read, read again) on the decrypted bytes.
// Owned by the shared_ptrs its pending handlers hold, so it lives exactly as
// long as an operation is outstanding and dies with the last one; the
// ssl::context it was built from must outlive it. Runs only on the
// io_context its socket belongs to.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <cstddef>
#include <memory>
#include <vector>

namespace pingpong {

class SslEchoSession : public std::enable_shared_from_this<SslEchoSession> {
 public:
  SslEchoSession(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& context);

  // Sets TCP_NODELAY, then handshakes and echoes; call on the socket's
  // context. A failed handshake prints one line to stderr and drops the
  // connection.
  void start();

  [[nodiscard]] boost::asio::ip::tcp::socket::executor_type socketExecutor() {
    return stream_.lowest_layer().get_executor();
  }

 private:
  void read();
  void write(size_t n);

  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
  std::vector<char> buffer_;
};

}  // namespace pingpong
