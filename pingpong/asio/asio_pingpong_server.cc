// Ping-pong echo server on Boost.Asio 1.74: the peer that libnet is measured
// against. One io_context per thread; connections are assigned round-robin.
//
// usage: asio_pingpong_server <address> <port> <threads>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <functional>
#include <memory>

#include "pingpong/asio/EchoSession.h"
#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/Listen.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::ip::tcp;

// The acceptor lives on context 0; each accepted socket is created directly
// on the next context in turn, so its handlers never run on another thread.
void acceptNext(tcp::acceptor& acceptor, pingpong::IoContextPool& pool) {
  acceptor.async_accept(
      pool.next(), [&acceptor, &pool](boost::system::error_code ec, tcp::socket socket) {
        if (ec == boost::asio::error::operation_aborted) return;  // shutting down
        if (!ec) {
          auto session = std::make_shared<pingpong::EchoSession>(std::move(socket));
          // start() touches the socket, so it runs on the socket's own context.
          boost::asio::post(session->socketExecutor(), [session] { session->start(); });
        } else {
          std::fprintf(stderr, "accept: %s\n", ec.message().c_str());
        }
        acceptNext(acceptor, pool);
      });
}

}  // namespace

int main(int argc, char** argv) {
  const pingpong::ServerArgs args = pingpong::parseServerArgs(argc, argv, {"asio_pingpong_server"});
  pingpong::IoContextPool pool(args.threads, /*keepAlive=*/true);
  boost::asio::io_context& main = pool.context(0);

  tcp::acceptor acceptor(main);
  if (!pingpong::listenOn(acceptor, args.endpoint, "asio_pingpong_server")) {
    return pingpong::kExitFailure;
  }

  boost::asio::signal_set signals(main, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    pool.stop();
  });

  acceptNext(acceptor, pool);
  std::printf(
      "listening on %s\n",
      pingpong::formatEndpoint(args.endpoint.address, acceptor.local_endpoint().port()).c_str());
  std::fflush(stdout);
  pool.run();
  return 0;
}
