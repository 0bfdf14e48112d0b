// Ping-pong echo server on Boost.Asio 1.74 written with C++20 coroutines
// (awaitable, co_spawn, use_awaitable): the anchor for libnet's coroutine
// ping-pong, as asio_pingpong_server is for its callbacks. One io_context per
// thread; connections are assigned round-robin.
//
// usage: asio_coro_pingpong_server <address> <port> <threads>

// Boost 1.74's awaitable.hpp calls std::exchange without including <utility>;
// it must come first.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
#include <cstdio>
#include <vector>

#include "pingpong/asio/IoContextPool.h"
#include "pingpong/asio/RunServer.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::awaitable;
using boost::asio::redirect_error;
using boost::asio::use_awaitable;
using boost::asio::ip::tcp;

constexpr const char* kProgram = "asio_coro_pingpong_server";

// As in EchoSession: the server is not told the block size, and 64 KiB is the
// most loopback TCP hands over per segment, so one read takes a whole message
// and anything queued behind it. Allocated once per session and reused.
constexpr size_t kBufferSize = 64 * 1024;

// One connection: the coroutine frame owns the socket and the buffer, so the
// session ends, and closes its socket, when the loop returns. Errors come back
// as codes (redirect_error) rather than exceptions: EOF is the normal end of
// every session and need not cost a throw.
awaitable<void> echo(tcp::socket socket) {
  boost::system::error_code ec;
  socket.set_option(tcp::no_delay(true), ec);
  std::vector<char> buffer(kBufferSize);
  for (;;) {
    const size_t n = co_await socket.async_read_some(boost::asio::buffer(buffer),
                                                     redirect_error(use_awaitable, ec));
    if (ec) co_return;
    co_await boost::asio::async_write(socket, boost::asio::buffer(buffer.data(), n),
                                      redirect_error(use_awaitable, ec));
    if (ec) co_return;
  }
}

// Runs on context 0 with the acceptor. Each socket is created on the next
// context in turn and its session is spawned on that socket's executor, so
// its completions never run on another thread.
awaitable<void> listen(tcp::acceptor& acceptor, pingpong::IoContextPool& pool) {
  for (;;) {
    tcp::socket socket(pool.next());
    boost::system::error_code ec;
    co_await acceptor.async_accept(socket, redirect_error(use_awaitable, ec));
    if (ec == boost::asio::error::operation_aborted) co_return;  // shutting down
    if (ec) {
      std::fprintf(stderr, "accept: %s\n", ec.message().c_str());
      continue;
    }
    const auto executor = socket.get_executor();
    boost::asio::co_spawn(executor, echo(std::move(socket)), boost::asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const pingpong::ServerArgs args = pingpong::parseServerArgs(argc, argv, {kProgram});
  return pingpong::runServer(kProgram, args,
                             [](tcp::acceptor& acceptor, pingpong::IoContextPool& pool) {
                               // Stopping the contexts leaves the sessions suspended; their frames,
                               // and with them the sockets, are destroyed when the pool destroys
                               // the contexts.
                               boost::asio::co_spawn(acceptor.get_executor(),
                                                     listen(acceptor, pool), boost::asio::detached);
                             });
}
