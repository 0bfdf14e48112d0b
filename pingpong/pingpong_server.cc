// pingpong_server: the server side of the muduo book's ping-pong benchmark on
// libnet. It echoes every byte it receives, with TCP_NODELAY, on <threads> I/O
// loops (0: everything on the accepting loop). SIGINT/SIGTERM stop it.
//
//   pingpong_server [--backend epoll|uring|auto] [--log-dir DIR] <address> <port> <threads>

#include "net/Buffer.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "pingpong/ServerMain.h"

using namespace libnet;

int main(int argc, char* argv[]) {
  return pingpong::serverMain(
      argc, argv, {"pingpong_server", "", [](TcpServer& server) {
                     server.setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buffer,
                                                  Timestamp) { conn->send(buffer); });
                   }});
}
