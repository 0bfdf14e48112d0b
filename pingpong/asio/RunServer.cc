#include "pingpong/asio/RunServer.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <string>

#include "pingpong/asio/Listen.h"

namespace pingpong {

int runServer(std::string_view program, const ServerArgs& args,
              const StartAccepting& startAccepting) {
  IoContextPool pool(args.threads, /*keepAlive=*/true);
  boost::asio::io_context& main = pool.context(0);

  boost::asio::ip::tcp::acceptor acceptor(main);
  if (!listenOn(acceptor, args.endpoint, std::string(program).c_str())) return kExitFailure;

  // Stopping the contexts leaves whatever is in flight where it is; sessions
  // and their sockets are destroyed with the contexts, when the pool goes.
  boost::asio::signal_set signals(main, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    pool.stop();
  });

  startAccepting(acceptor, pool);
  std::printf("listening on %s\n",
              formatEndpoint(args.endpoint.address, acceptor.local_endpoint().port()).c_str());
  std::fflush(stdout);
  pool.run();
  return 0;
}

}  // namespace pingpong
