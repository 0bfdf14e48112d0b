// api_0_1_roundtrip: a program written for libnet 0.1, built against the
// installed libnet as its author would build it: the configuration setters
// of 0.1 (setThreadNum, setTcpNoDelay, enableRetry) and its getLoop() and
// getContext() names, which 0.2 keeps, deprecated, for one minor version
// (CHANGELOG.md). The pkg-config consumer test checks that the compiler
// warns about each and that the program still works: an echo server with two
// I/O threads, a client that sends one message and checks it comes back.
//
// Exit status: 0 on a verified echo, 1 otherwise (the reason on stderr).

#include <any>
#include <cstdio>
#include <string>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"

int main() {
  using namespace libnet;
  EventLoop loop;
  TcpServer server(&loop, InetAddress(0, /*loopbackOnly=*/true), "api-0.1");
  server.setThreadNum(2);
  server.setTcpNoDelay(true);
  server.setConnectionCallback([](const TcpConnectionPtr& conn) {
    if (conn->connected()) conn->setContext(conn->getLoop());
  });
  server.setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
    // Served on the loop the connection callback saw.
    if (std::any_cast<EventLoop*>(conn->getContext()) == conn->getLoop()) conn->send(buffer);
  });
  server.start();

  const std::string message = "hello from a program written for libnet 0.1";
  std::string received;
  int status = 1;
  TcpClient client(&loop, server.listenAddress(), "api-0.1-client");
  client.enableRetry();
  client.setConnectionCallback([&](const TcpConnectionPtr& conn) {
    if (conn->connected()) conn->send(message);
  });
  client.setMessageCallback([&](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
    received += buffer->retrieveAllAsString();
    if (received.size() < message.size()) return;
    status = received == message && server.loopStats().size() == 2 ? 0 : 1;
    if (status != 0) std::fprintf(stderr, "api_0_1_roundtrip: got '%s'\n", received.c_str());
    client.stop();
    conn->forceClose();
    loop.quit();
  });
  loop.runAfter(std::chrono::seconds(10), [&] {
    std::fprintf(stderr, "api_0_1_roundtrip: no echo within 10 s\n");
    loop.quit();
  });
  client.connect();
  loop.loop();
  if (status == 0) std::printf("api_0_1_roundtrip: OK (%zu bytes)\n", received.size());
  return status;
}
