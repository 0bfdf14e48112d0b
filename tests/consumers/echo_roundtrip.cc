// echo_roundtrip: the program the consumer tests build against an installed or
// imported libnet, the way an application would: an echo TcpServer on an
// ephemeral loopback port, serving each connection with a coroutine (the
// coroutine layer, net/coro/), and a TcpClient on callbacks that sends one
// message through it and checks that exactly those bytes come back. Uses the
// public headers only.
//
// Exit status: 0 on a verified echo, 1 on a mismatch, a failed connect or a
// 10 s timeout (the reason on stderr).

#include <cstdio>
#include <string>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"

namespace {

libnet::coro::Task<> echo(libnet::coro::Stream stream) {
  while (libnet::coro::Input in = co_await stream.read()) {
    if (co_await stream.write(&*in) != libnet::coro::Errc::kOk) break;
  }
}

}  // namespace

int main() {
  using namespace libnet;
  EventLoop loop;
  TcpServer server(&loop, InetAddress(0, /*loopbackOnly=*/true), "consumer-echo");
  coro::serve(server, echo);
  server.start();

  const std::string message = "hello from a program that links libnet";
  std::string received;
  int status = 1;
  TcpClient client(&loop, server.listenAddress(), "consumer-client");
  client.setConnectErrorCallback([&](int error) {
    std::fprintf(stderr, "echo_roundtrip: connect failed: errno %d\n", error);
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
    if (status != 0) std::fprintf(stderr, "echo_roundtrip: got '%s'\n", received.c_str());
    conn->shutdown();
    loop.quit();
  });
  loop.runAfter(std::chrono::seconds(10), [&] {
    std::fprintf(stderr, "echo_roundtrip: no echo within 10 s\n");
    loop.quit();
  });
  client.connect();
  loop.loop();
  if (status == 0) std::printf("echo_roundtrip: OK (%zu bytes)\n", received.size());
  return status;
}
