#include "pingpong/asio/Listen.h"

#include <cstdio>

namespace pingpong {

bool listenOn(boost::asio::ip::tcp::acceptor& acceptor, const Endpoint& endpoint,
              const char* program) {
  using boost::asio::ip::tcp;
  const tcp::endpoint where(boost::asio::ip::make_address(endpoint.address), endpoint.port);
  boost::system::error_code ec;
  const char* step = "open";
  acceptor.open(where.protocol(), ec);
  if (!ec) {
    step = "setsockopt(SO_REUSEADDR)";
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  }
  if (!ec) {
    step = "bind";
    acceptor.bind(where, ec);
  }
  if (!ec) {
    step = "listen";
    acceptor.listen(tcp::acceptor::max_listen_connections, ec);
  }
  if (!ec) return true;
  std::fprintf(stderr, "%s: cannot listen on %s: %s: %s\n", program,
               formatEndpoint(endpoint.address, endpoint.port).c_str(), step, ec.message().c_str());
  return false;
}

}  // namespace pingpong
