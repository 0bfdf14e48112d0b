// ws_roundtrip: the WebSocket program the consumer tests build against an
// installed or imported libnet_websocket, the way an application would. An
// HttpServer on an ephemeral port of 127.0.0.1 upgrades /echo to WebSocket
// (ws::serve) and echoes each message; a ws::connect client opens
// ws://127.0.0.1:PORT/echo, sends one text message and checks that exactly
// that text comes back as a text message. Uses the public headers only; the
// host is numeric, so no name is looked up and no packet leaves the host.
//
// Exit status: 0 on a verified echo, 1 on a failed connect or handshake, a
// mismatch, a close before the echo or a 10 s timeout (the reason on stderr).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/http/HttpServer.h"
#include "net/websocket/WebSocket.h"
#include "net/websocket/WebSocketClient.h"
#include "net/websocket/WebSocketServer.h"

int main() {
  using namespace libnet;
  const std::string message = "hello from a program that links libnet_websocket";
  int status = 1;
  try {
    EventLoop loop;
    http::HttpServer server(&loop, InetAddress("127.0.0.1", 0), "consumer-ws");
    ws::serve(server, "/echo", {},
              {.onMessage = [](const ws::WebSocketPtr& socket, ws::MessageType type,
                               std::string_view payload) { (void)socket->send(type, payload); }});
    server.start();
    const std::string url =
        "ws://127.0.0.1:" + std::to_string(server.listenAddress().port()) + "/echo";

    auto fail = [&](const std::string& why) {
      std::fprintf(stderr, "ws_roundtrip: %s\n", why.c_str());
      loop.quit();
    };
    bool echoed = false;
    ws::Handlers client{
        .onOpen = [&](const ws::WebSocketPtr& socket) { (void)socket->sendText(message); },
        .onMessage =
            [&](const ws::WebSocketPtr& socket, ws::MessageType type, std::string_view payload) {
              echoed = true;
              if (type != ws::MessageType::kText || payload != message) {
                return fail("got '" + std::string(payload) + "'");
              }
              status = 0;
              socket->close();
            },
        .onClose =
            [&](const ws::WebSocketPtr&, uint16_t code, std::string_view reason) {
              if (!echoed) {
                return fail("closed before the echo: " + std::to_string(code) + " " +
                            std::string(reason));
              }
              loop.quit();
            },
    };
    ws::connect(&loop, url, {}, client, [&](const std::string& why) { fail(url + ": " + why); });
    loop.runAfter(std::chrono::seconds(10), [&] {
      fail(status == 0 ? "echoed, but the close did not finish within 10 s"
                       : "no echo within 10 s");
    });
    loop.loop();
    if (status == 0) std::printf("ws_roundtrip: OK (%zu bytes)\n", message.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ws_roundtrip: %s\n", e.what());
    return 1;
  }
  return status;
}
