// One client-side connection of the asio TLS ping-pong client: the TLS twin
// of PingSession. After a blocking TCP connect and an asynchronous client
// handshake (certificate checked against the context's CA and the server's
// address), it sends one block when started, then echoes whatever it
// receives, counting bytes and read completions into the SessionStats of its
// thread. Held by the client's per-thread list and by its pending handlers;
// the ssl::context it was built from must outlive it. Everything after
// connect() runs on the io_context its socket belongs to.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pingpong/asio/PingSession.h"

namespace pingpong {

class SslPingSession : public std::enable_shared_from_this<SslPingSession> {
 public:
  // Called once the handshake ends; `error` is empty on success, otherwise
  // says why (for a rejected certificate, which check failed).
  using HandshakeDone = std::function<void(const std::string& error)>;

  // `host`: the name or IP address the server's certificate must carry.
  SslPingSession(boost::asio::io_context& context, boost::asio::ssl::context& tls,
                 SessionStats& stats, size_t blocksize, const std::string& host);

  // Blocking TCP connect, done before the clock starts; throws
  // boost::system::system_error.
  void connect(const boost::asio::ip::tcp::endpoint& endpoint);
  // Starts the TLS handshake, also before the clock; call on the socket's
  // context.
  void handshake(HandshakeDone done);
  // Sends the first block; call on the socket's context.
  void start();
  // Stops counting and closes the socket (without close_notify: the run is
  // over, and the server only drops the connection); pending handlers then
  // complete with operation_aborted. Call on the socket's context.
  void stop();

 private:
  void read();
  void write(size_t n);
  void fail(const boost::system::error_code& ec);
  [[nodiscard]] std::string describe(const boost::system::error_code& ec);

  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
  SessionStats& stats_;
  std::vector<char> buffer_;
  size_t blocksize_;
  bool stopped_ = false;
};

}  // namespace pingpong
