// ws_client_cases: libnet's WebSocket client (the coroutine API) run against
// a server of another implementation (python3-websockets, driven by
// ws_client_python_test.py): echoes of every kind and size, the automatic
// pong, a close with every sendable code, the server's own close. Exits 0
// when every case passed, 1 naming the first that did not.
//
// usage: ws_client_cases URL BACKEND OFFER_DEFLATE EXPECT_DEFLATE

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/PollerKind.h"
#include "net/coro/Spawn.h"
#include "net/coro/Task.h"
#include "net/websocket/CoroWebSocket.h"

namespace {

using namespace libnet;

struct Run {
  std::string url;
  ws::ClientOptions options;
  bool expectDeflate = false;
  std::string failure;
};

coro::Task<bool> echoes(ws::CoroWebSocket& socket, ws::MessageType type, std::string payload) {
  if (co_await socket.send(type, payload) != coro::Errc::kOk) co_return false;
  ws::Message m = co_await socket.read();
  co_return !m.isClose() && m.type == type && m.payload == payload;
}

coro::Task<std::string> echoCases(EventLoop* loop, Run* run) {
  ws::CoroConnectResult c = co_await ws::connect(loop, run->url, run->options);
  if (!c) co_return "connect: " + c.error;
  ws::CoroWebSocket& socket = c.socket;
  if (socket.deflate() != run->expectDeflate) co_return "deflate negotiated wrongly";
  const std::vector<std::pair<ws::MessageType, std::string>> messages = {
      {ws::MessageType::kText, "hello"},
      {ws::MessageType::kBinary, std::string("\0\x01\xff", 3)},
      {ws::MessageType::kText, ""},
      {ws::MessageType::kBinary, ""},
      {ws::MessageType::kText, std::string(16 * 1024 * 1024, 'w')},
      {ws::MessageType::kBinary, std::string(16 * 1024 * 1024, '\x7f')},
  };
  for (const auto& [type, payload] : messages) {
    if (!co_await echoes(socket, type, payload)) {
      co_return "echo of " + std::to_string(payload.size()) + " bytes";
    }
  }
  // The server pings us and tells whether our automatic pong came back.
  if (co_await socket.send(ws::MessageType::kText, "ping-me") != coro::Errc::kOk) co_return "send";
  ws::Message answer = co_await socket.read();
  if (answer.payload != "pong-received") co_return "automatic pong: " + answer.payload;
  // The server closes first.
  co_await socket.send(ws::MessageType::kText, "close-me");
  ws::Message closed = co_await socket.read();
  if (closed.closeCode != 4002) co_return "the server's close code";
  co_return "";
}

coro::Task<std::string> closeCases(EventLoop* loop, Run* run) {
  std::vector<uint16_t> codes = {1000, 1001, 1002, 1003, 3000, 3999, 4000, 4999};
  for (uint16_t code = 1007; code <= 1014; ++code) codes.push_back(code);
  for (const uint16_t code : codes) {
    ws::CoroConnectResult c = co_await ws::connect(loop, run->url, run->options);
    if (!c) co_return "connect: " + c.error;
    const uint16_t echoed = co_await c.socket.close(code, "closing with " + std::to_string(code));
    if (echoed != code)
      co_return "close " + std::to_string(code) + " answered " + std::to_string(echoed);
  }
  co_return "";
}

coro::Task<> runAll(EventLoop* loop, Run* run) {
  run->failure = co_await echoCases(loop, run);
  if (run->failure.empty()) run->failure = co_await closeCases(loop, run);
  loop->quit();
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 5) {
    std::cerr << "usage: ws_client_cases URL BACKEND OFFER_DEFLATE EXPECT_DEFLATE\n";
    return 2;
  }
  const std::optional<PollerKind> backend = parsePollerKind(argv[2]);
  if (!backend) return 2;
  Run run;
  run.url = argv[1];
  run.options.ws.deflate.enabled = std::string(argv[3]) == "1";
  run.options.ws.fragmentSize = 1024 * 1024;
  run.expectDeflate = std::string(argv[4]) == "1";
  EventLoop loop(*backend);
  loop.runAfter(std::chrono::seconds(60), [&] {
    run.failure = "timed out";
    loop.quit();
  });
  coro::spawn(&loop, runAll(&loop, &run));
  loop.loop();
  if (!run.failure.empty()) {
    std::cerr << "ws_client_cases: " << run.failure << "\n";
    return 1;
  }
  std::cout << "ws_client_cases: all cases passed\n";
  return 0;
}
