// coro_pingpong_server: pingpong_server written with the coroutine layer
// (net/coro/): one coroutine per connection reads whatever arrived and writes
// it back. Same command line, output and behaviour as pingpong_server, which
// it is measured against (tools/run.sh, the libnet-coro-* columns).
//
//   coro_pingpong_server [--backend epoll|uring|auto] [--log-dir DIR] <address> <port> <threads>

#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "pingpong/ServerMain.h"

using namespace libnet;

namespace {

coro::Task<> echo(coro::Stream stream) {
  while (coro::Input in = co_await stream.read()) {
    if (co_await stream.write(&*in) != coro::Errc::kOk) break;
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  return pingpong::serverMain(argc, argv,
                              {"coro_pingpong_server", ", one coroutine per connection",
                               [](TcpServer& server) { coro::serve(server, echo); }});
}
