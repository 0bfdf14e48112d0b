// Memory a server WebSocket holds once it is idle again after a large
// message: back to what it held idle before (and within the bound
// docs/websocket.md states), whatever the message's size. Both APIs
// (WebSocket on HttpServer, CoroWebSocket on a coroutine), with and without
// permessage-deflate, on both backends. What is measured is heldMemory():
// the connection's buffers, the frame and message storage and zlib's state,
// counted as they are allocated. A hand-made client (a blocking socket and
// the codec) sends one 16 MiB message, highly compressible, and reads its
// echo.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "net/http/HttpParser.h"
#include "net/http/HttpServer.h"
#include "net/websocket/CoroWebSocket.h"
#include "net/websocket/Deflate.h"
#include "net/websocket/Receiver.h"
#include "net/websocket/Sender.h"
#include "net/websocket/WebSocketServer.h"
#include "tests/net/TestUtil.h"
#include "tests/net/websocket/HandMadeClient.h"

namespace libnet::ws {
namespace {

using test::BlockingClient;
using test::runSync;

constexpr size_t kLargeMessage = 16 * 1024 * 1024;
// What an idle server WebSocket may hold (the bounds in docs/websocket.md,
// "Memory"): its buffers, and with deflate zlib's state as well.
constexpr size_t kIdleBuffers = 8 * 1024;
constexpr size_t kZlibState = 320 * 1024;
// Idle after the large message, the small buffers an idle connection keeps
// may be others than before, of another small size.
constexpr size_t kSmallBufferSlack = 2 * 1024;

enum class Api { kCallbacks, kCoroutines };

// A client written with the codec on a blocking socket: no loop, no
// library connection code on its side.
class Client {
 public:
  Client(const SocketAddress& server, bool deflate) : socket_(server) {
    DeflateOptions offer;
    offer.enabled = deflate;
    std::string request = test::upgradeRequest();
    if (deflate) {
      request.insert(request.size() - 2, "Sec-WebSocket-Extensions: " + makeOffer(offer) + "\r\n");
    }
    EXPECT_TRUE(socket_.sendAll(request));
    const std::string head = test::readUpgradeHead(socket_);
    std::optional<DeflateParams> params;
    const std::string name = "Sec-WebSocket-Extensions: ";
    if (const size_t at = head.find(name); at != std::string::npos) {
      const size_t end = head.find("\r\n", at);
      std::string error;
      params = acceptResponse(head.substr(at + name.size(), end - at - name.size()), offer, &error);
      EXPECT_EQ(error, "");
    }
    EXPECT_EQ(params.has_value(), deflate) << head;
    sender_.emplace(Role::kClient, params, offer);
    receiver_.emplace(Role::kClient, ReceiverLimits{SIZE_MAX, SIZE_MAX}, params);
  }

  // Sends `message` and reads its echo; whether it came back whole.
  bool echo(std::string_view message) {
    Buffer frames;
    sender_->appendMessage(&frames, MessageType::kBinary, message);
    if (!socket_.sendAll(frames.view())) return false;
    for (;;) {
      switch (receiver_->next(&input_)) {
        case Receiver::Event::kMessage:
          return receiver_->payload() == message;
        case Receiver::Event::kNeedMore:
          if (input_.readFd(socket_.fd()).bytes <= 0) return false;  // SO_RCVTIMEO bounds it
          break;
        default:
          return false;
      }
    }
  }

 private:
  BlockingClient socket_;
  std::optional<Sender> sender_;
  std::optional<Receiver> receiver_;
  Buffer input_;
};

// The coroutine server's one WebSocket, for the test to look at on the loop.
struct CoroSocketSlot {
  CoroWebSocket* socket = nullptr;
};

coro::Task<> serveCoroWebSocket(coro::Stream stream, Options options,
                                std::shared_ptr<CoroSocketSlot> slot) {
  http::HttpParser parser;
  for (;;) {
    const http::HttpParser::Result result = parser.parse(&stream.input());
    if (result == http::HttpParser::Result::kComplete) break;
    if (result == http::HttpParser::Result::kError || !co_await stream.readMore()) co_return;
  }
  AcceptResult accepted = co_await accept(std::move(stream), parser.request(), options);
  if (!accepted) co_return;
  // Valid while this coroutine waits in read(): the loop thread, which runs
  // the test's inspection too, is then in neither.
  slot->socket = &accepted.socket;
  for (;;) {
    Message message = co_await accepted.socket.read();
    if (message.isClose() || message.error != coro::Errc::kOk) break;
    if (co_await accepted.socket.send(message.type, message.payload) != coro::Errc::kOk) break;
  }
  slot->socket = nullptr;
}

class IdleMemoryTest : public ::testing::TestWithParam<std::tuple<PollerKind, Api, bool>> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(std::get<0>(GetParam()));
    thread_ = std::make_unique<EventLoopThread>(nullptr, "ws-memory", std::get<0>(GetParam()));
    loop_ = thread_->startLoop();
    Options options;
    options.deflate.enabled = std::get<2>(GetParam());
    runSync(loop_, [&] {
      if (std::get<1>(GetParam()) == Api::kCallbacks) {
        startCallbackServer(options);
      } else {
        startCoroutineServer(options);
      }
    });
  }

  void TearDown() override {
    if (loop_ != nullptr) {
      runSync(loop_, [this] {
        opened_.reset();
        httpServer_.reset();
        tcpServer_.reset();
      });
    }
    thread_.reset();
  }

  void startCallbackServer(const Options& options) {
    httpServer_ = std::make_unique<http::HttpServer>(loop_, InetAddress("127.0.0.1", 0), "ws");
    serve(*httpServer_, "", options,
          {.onOpen = [this](const WebSocketPtr& ws) { opened_ = ws; },
           .onMessage = [](const WebSocketPtr& ws, MessageType type,
                           std::string_view payload) { (void)ws->send(type, payload); }});
    httpServer_->start();
    address_ = httpServer_->listenAddress();
  }

  void startCoroutineServer(const Options& options) {
    tcpServer_ = std::make_unique<TcpServer>(loop_, InetAddress("127.0.0.1", 0), "ws-coro");
    coro::serve(*tcpServer_, [options, slot = slot_](coro::Stream stream) {
      return serveCoroWebSocket(std::move(stream), options, slot);
    });
    tcpServer_->start();
    address_ = tcpServer_->listenAddress();
  }

  // The server WebSocket's heldMemory(), read on its loop (nullopt while
  // there is none).
  std::optional<size_t> held() {
    return runSync(loop_, [this]() -> std::optional<size_t> {
      if (opened_) return opened_->heldMemory();
      if (slot_->socket != nullptr) return slot_->socket->heldMemory();
      return std::nullopt;
    });
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<http::HttpServer> httpServer_;
  std::unique_ptr<TcpServer> tcpServer_;
  WebSocketPtr opened_;
  std::shared_ptr<CoroSocketSlot> slot_ = std::make_shared<CoroSocketSlot>();
  SocketAddress address_;
};

TEST_P(IdleMemoryTest, AfterALargeMessageTheServerHoldsWhatItHeldIdleBefore) {
  const bool deflate = std::get<2>(GetParam());
  Client client(address_, deflate);
  // Warm: messages of each kind have been through (a small one stays in
  // the WebSocket's own small storage, a larger one borrows), zlib's
  // windows included.
  ASSERT_TRUE(client.echo(std::string(100, 's')));
  ASSERT_TRUE(client.echo(std::string(4096, 'w')));
  size_t before = 0;
  ASSERT_TRUE(test::waitUntil([&] { return held().has_value(); }));
  // Idle: the echo written and its buffers given back (the last write's
  // completion may come just after the client has read the echo).
  const size_t bound = kIdleBuffers + (deflate ? kZlibState : 0);
  ASSERT_TRUE(test::waitUntil([&] {
    before = held().value_or(SIZE_MAX);
    return before <= bound;
  })) << before;
  std::string large(kLargeMessage, '\0');
  for (size_t i = 0; i < large.size(); i += 4096) large[i] = static_cast<char>('a' + i / 4096 % 26);
  ASSERT_TRUE(client.echo(large));
  size_t after = SIZE_MAX;
  const bool idleAgain = test::waitUntil([&] {
    after = held().value_or(SIZE_MAX);
    return after <= before + kSmallBufferSlack && after <= bound;
  });
  EXPECT_TRUE(idleAgain) << "held " << after << " bytes idle after a " << kLargeMessage
                         << "-byte message, " << before << " before it";
  // And the message still echoes after all that.
  EXPECT_TRUE(client.echo("still there"));
}

std::string caseName(const ::testing::TestParamInfo<IdleMemoryTest::ParamType>& info) {
  const auto& [backend, api, deflate] = info.param;
  return std::string(backend == PollerKind::kEpoll ? "Epoll" : "IoUring") +
         (api == Api::kCallbacks ? "Callbacks" : "Coroutines") + (deflate ? "Deflate" : "Plain");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, IdleMemoryTest,
    ::testing::Combine(::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                       ::testing::Values(Api::kCallbacks, Api::kCoroutines), ::testing::Bool()),
    caseName);

}  // namespace
}  // namespace libnet::ws
