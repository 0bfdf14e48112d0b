// tls_roundtrip CERT KEY CA: the TLS program the consumer tests build against
// an installed or imported libnet_tls, the way an application would: a TLS
// echo TcpServer on an ephemeral loopback port (certificate chain CERT, key
// KEY) and a TLS TcpClient that trusts CA, checks the server's certificate
// against 127.0.0.1, sends one message and checks that exactly those bytes
// come back. Uses the public headers only.
//
// Exit status: 0 on a verified echo, 1 on a mismatch, a failed handshake or
// a 10 s timeout (the reason on stderr), 2 for bad arguments.

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"

int main(int argc, char* argv[]) {
  using namespace libnet;
  if (argc != 4) {
    std::fprintf(stderr, "usage: tls_roundtrip CERT KEY CA\n");
    return 2;
  }
  int status = 1;
  try {
    EventLoop loop;
    tls::Context::ServerOptions serverTls;
    serverTls.certChainFile = argv[1];
    serverTls.keyFile = argv[2];
    TcpServer server(&loop, InetAddress(0, /*loopbackOnly=*/true), "consumer-tls",
                     {.layer = tls::newLayer(tls::Context::newServer(serverTls))});
    server.setMessageCallback(
        [](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) { conn->send(buffer); });
    server.start();

    tls::Context::ClientOptions clientTls;
    clientTls.caFile = argv[3];
    TcpClient client(&loop, server.listenAddress(), "consumer-tls-client",
                     {.layer = tls::newLayer(tls::Context::newClient(clientTls), "127.0.0.1")});
    const std::string message = "hello over TLS from a program that links libnet_tls";
    std::string received;
    client.setConnectErrorCallback([&](int error) {
      std::fprintf(stderr, "tls_roundtrip: connect or handshake failed: errno %d\n", error);
      client.stop();
      loop.quit();
    });
    client.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (conn->connected()) conn->send(message);
    });
    client.setMessageCallback([&](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
      received += buffer->retrieveAllAsString();
      if (received.size() < message.size()) return;
      status = received == message ? 0 : 1;
      conn->shutdown();
      loop.quit();
    });
    loop.runAfter(std::chrono::seconds(10), [&] {
      std::fprintf(stderr, "tls_roundtrip: no echo within 10 s\n");
      loop.quit();
    });
    client.connect();
    loop.loop();
    if (status == 0) std::printf("tls_roundtrip: OK (%zu bytes)\n", received.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tls_roundtrip: %s\n", e.what());
    return 1;
  }
  return status;
}
