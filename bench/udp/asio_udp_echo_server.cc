// UDP echo server on Boost.Asio 1.74, written the way asio's own
// async_udp_echo_server example is: one datagram at a time,
// async_receive_from, then async_send_to back to the sender, then receive
// again. With --threads N each thread runs its own io_context and its own
// socket, the sockets sharing the port through SO_REUSEPORT so that the
// kernel spreads senders over them. It is the peer that libnet's
// udp_echo_server is measured against in bench/udp/run_udp_bench.py.
//
// usage: asio_udp_echo_server --port P [--address A] [--threads N] [--sink]
#include <sys/socket.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/detail/socket_option.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "bench/udp/ServerArgs.h"

namespace {

using boost::asio::ip::udp;
using udpbench::ServerCounters;

constexpr const char* kProgram = "asio_udp_echo_server";

using ReusePort = boost::asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

// One socket and its one outstanding operation; lives as long as its
// io_context runs. Only its own context's thread touches it.
class EchoSocket {
 public:
  EchoSocket(boost::asio::io_context& context, const udp::endpoint& endpoint, bool reusePort,
             bool sink)
      : socket_(context), sink_(sink) {
    socket_.open(endpoint.protocol());
    if (reusePort) socket_.set_option(ReusePort(true));
    socket_.bind(endpoint);
  }

  [[nodiscard]] uint16_t port() const { return socket_.local_endpoint().port(); }
  [[nodiscard]] const ServerCounters& counters() const { return counters_; }

  void receive() {
    socket_.async_receive_from(boost::asio::buffer(data_), sender_,
                               [this](boost::system::error_code ec, size_t n) {
                                 if (ec == boost::asio::error::operation_aborted) return;
                                 if (ec) {
                                   receive();
                                   return;
                                 }
                                 ++counters_.received;
                                 counters_.bytes += n;
                                 if (sink_) {
                                   receive();
                                 } else {
                                   send(n);
                                 }
                               });
  }

 private:
  void send(size_t n) {
    socket_.async_send_to(boost::asio::buffer(data_, n), sender_,
                          [this](boost::system::error_code ec, size_t) {
                            if (ec == boost::asio::error::operation_aborted) return;
                            if (ec) {
                              ++counters_.dropped;
                            } else {
                              ++counters_.echoed;
                            }
                            receive();
                          });
  }

  udp::socket socket_;
  bool sink_;
  udp::endpoint sender_;
  // Large enough for any UDP payload, so that nothing is truncated.
  char data_[65536];
  ServerCounters counters_;
};

}  // namespace

int main(int argc, char** argv) {
  const udpbench::ServerArgs args =
      udpbench::parseServerArgs(argc, argv, {.program = kProgram, .threads = true});

  std::vector<std::unique_ptr<boost::asio::io_context>> contexts;
  std::vector<std::unique_ptr<EchoSocket>> sockets;
  try {
    udp::endpoint endpoint(boost::asio::ip::make_address(args.address), args.port);
    for (int i = 0; i < args.threads; ++i) {
      contexts.push_back(std::make_unique<boost::asio::io_context>(1));
      sockets.push_back(
          std::make_unique<EchoSocket>(*contexts.back(), endpoint, args.threads > 1, args.sink));
      // The first socket may have bound port 0; the others join the port it got.
      if (i == 0) endpoint.port(sockets[0]->port());
    }
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "%s: cannot bind %s: %s\n", kProgram,
                 udpbench::formatEndpoint(args.address, args.port).c_str(), e.what());
    return 1;
  }

  // The signal stops every context; each thread's loop then returns.
  boost::asio::signal_set signals(*contexts[0], SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) {
    for (auto& context : contexts) context->stop();
  });
  for (auto& socket : sockets) socket->receive();

  std::printf("listening on %s\n",
              udpbench::formatEndpoint(args.address, sockets[0]->port()).c_str());
  std::fflush(stdout);

  std::vector<std::thread> threads;
  for (int i = 1; i < args.threads; ++i) {
    threads.emplace_back([&context = *contexts[i]] { context.run(); });
  }
  contexts[0]->run();
  for (auto& thread : threads) thread.join();

  ServerCounters total;
  for (const auto& socket : sockets) total += socket->counters();
  udpbench::printStopLine(total);
  return 0;
}
