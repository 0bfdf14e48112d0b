// One server-side connection of the asio ping-pong server: the usual asio
// echo session (async_read_some, async_write what was read, read again).
// Owned by the shared_ptrs its pending handlers hold, so it lives exactly as
// long as an operation is outstanding and dies with the last one. Runs only
// on the io_context its socket belongs to.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <memory>
#include <vector>

namespace pingpong {

class EchoSession : public std::enable_shared_from_this<EchoSession> {
 public:
  explicit EchoSession(boost::asio::ip::tcp::socket socket);

  // Sets TCP_NODELAY and issues the first read; call on the socket's context.
  void start();

  [[nodiscard]] boost::asio::ip::tcp::socket::executor_type socketExecutor() {
    return socket_.get_executor();
  }

 private:
  void read();
  void write(size_t n);

  boost::asio::ip::tcp::socket socket_;
  std::vector<char> buffer_;
};

}  // namespace pingpong
