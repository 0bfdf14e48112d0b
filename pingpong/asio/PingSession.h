// One client-side connection of the asio ping-pong client: sends one block
// when started, then echoes whatever it receives, counting bytes and read
// completions into the SessionStats of its thread. Held by the client's
// per-thread list and by its pending handlers. Everything after connect()
// runs on the io_context its socket belongs to.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pingpong {

// Counters shared by the sessions of one thread; read after the threads end.
struct SessionStats {
  int64_t bytes = 0;
  int64_t messages = 0;
  std::string error;  // first connection failure seen during the run
};

class PingSession : public std::enable_shared_from_this<PingSession> {
 public:
  PingSession(boost::asio::io_context& context, SessionStats& stats, size_t blocksize);

  // Blocking connect, done before the clock starts; throws
  // boost::system::system_error.
  void connect(const boost::asio::ip::tcp::endpoint& endpoint);
  // Sends the first block; call on the socket's context.
  void start();
  // Stops counting and closes the socket; pending handlers then complete
  // with operation_aborted. Call on the socket's context.
  void stop();

 private:
  void read();
  void write(size_t n);
  void fail(const boost::system::error_code& ec);

  boost::asio::ip::tcp::socket socket_;
  SessionStats& stats_;
  std::vector<char> buffer_;
  size_t blocksize_;
  bool stopped_ = false;
};

}  // namespace pingpong
