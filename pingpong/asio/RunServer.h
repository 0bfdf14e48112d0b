// runServer(): the main() of every asio ping-pong server (callback,
// coroutine and TLS) once its arguments are parsed: an IoContextPool with
// one context per thread, an acceptor on context 0 listening on the
// arguments' endpoint, SIGINT/SIGTERM closing the acceptor and stopping the
// pool, and the "listening on ADDR:PORT" line that a runner reads the port
// from. How connections are accepted and served is left to each server.
//
// Called once, from the main thread, which also runs context 0 (and with it
// the acceptor and the signal handler) until a signal comes.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <string_view>

#include "pingpong/asio/IoContextPool.h"
#include "pingpong/floor/PingpongArgs.h"

namespace pingpong {

// Starts the accept loop on `acceptor` (listening, on context 0 of `pool`);
// called once, on the main thread, before the pool runs. The loop must end
// when an accept completes with operation_aborted (the acceptor was closed).
using StartAccepting =
    std::function<void(boost::asio::ip::tcp::acceptor& acceptor, IoContextPool& pool)>;

// Returns the status to exit with: kExitFailure (after saying why, prefixed
// with `program`) if the server cannot listen, 0 after a signal.
[[nodiscard]] int runServer(std::string_view program, const ServerArgs& args,
                            const StartAccepting& startAccepting);

}  // namespace pingpong
