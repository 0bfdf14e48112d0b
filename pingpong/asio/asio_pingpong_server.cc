// Ping-pong echo server on Boost.Asio 1.74: the peer that libnet is measured
// against. One io_context per thread; connections are assigned round-robin.
//
// usage: asio_pingpong_server <address> <port> <threads>
#include <boost/asio/ip/tcp.hpp>

#include "pingpong/asio/EchoSession.h"
#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/RunServer.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::ip::tcp;

constexpr const char* kProgram = "asio_pingpong_server";

}  // namespace

int main(int argc, char** argv) {
  const pingpong::ServerArgs args = pingpong::parseServerArgs(argc, argv, {kProgram});
  return pingpong::runServer(
      kProgram, args, [](tcp::acceptor& acceptor, pingpong::IoContextPool& pool) {
        pingpong::acceptEchoSessions(acceptor, pool, [](tcp::socket socket) { return socket; });
      });
}
