// listenOn(): opens, binds and listens on the asio ping-pong servers'
// acceptor (for runServer()), saying which step failed and why on stderr, as
// the other peers do.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include "pingpong/floor/PingpongArgs.h"

namespace pingpong {

// False (after printing "<program>: cannot listen on ADDR:PORT: STEP: REASON")
// if any step failed.
bool listenOn(boost::asio::ip::tcp::acceptor& acceptor, const Endpoint& endpoint,
              const char* program);

}  // namespace pingpong
