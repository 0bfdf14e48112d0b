// WebSocket connections: libnet's server (ws::serve on an HttpServer) and
// libnet's client (callbacks and coroutines) talking to each other over
// loopback, plain and TLS, and hand-made clients on a blocking socket for
// what a well-behaved client never does. Both backends.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/NameResolver.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Spawn.h"
#include "net/http/HttpServer.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"
#include "net/websocket/CoroWebSocket.h"
#include "net/websocket/Handshake.h"
#include "net/websocket/WebSocket.h"
#include "net/websocket/WebSocketClient.h"
#include "net/websocket/WebSocketServer.h"
#include "tests/net/TestUtil.h"
#include "tests/net/tls/TestPki.h"
#include "tests/net/websocket/HandMadeClient.h"

namespace libnet::ws {
namespace {

using namespace std::chrono_literals;
using test::BlockingClient;
using test::clientFrame;
using test::kWait;
using test::lowered;
using test::readUpgradeHead;
using test::runSync;
using test::upgradeRequest;

constexpr size_t kMiB = 1024 * 1024;

// What one end saw, filled on its loop thread, read by the test thread.
struct Events {
  std::mutex mutex;
  std::condition_variable changed;
  WebSocketPtr ws;
  bool opened = false;
  std::vector<std::pair<MessageType, std::string>> messages;
  std::vector<std::string> pongs;
  std::optional<std::pair<uint16_t, std::string>> closed;
  std::optional<std::string> error;
  MonoTime closedAt{};
  bool drained = false;

  // Fields read once a wait is over are copied under the lock: another
  // connection of the same server may close (and write here) meanwhile.
  std::optional<std::pair<uint16_t, std::string>> closedNow() {
    std::lock_guard lock(mutex);
    return closed;
  }
  MonoTime closedAtNow() {
    std::lock_guard lock(mutex);
    return closedAt;
  }

  template <class Pred>
  bool waitFor(Pred pred) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, kWait, [&] { return pred(); });
  }
  void update(const std::function<void()>& f) {
    {
      std::lock_guard lock(mutex);
      f();
    }
    changed.notify_all();
  }
};

Handlers recordInto(const std::shared_ptr<Events>& ev) {
  return {
      .onOpen =
          [ev](const WebSocketPtr& ws) { ev->update([&] { ev->ws = ws, ev->opened = true; }); },
      .onMessage =
          [ev](const WebSocketPtr&, MessageType type, std::string_view payload) {
            ev->update([&] { ev->messages.emplace_back(type, std::string(payload)); });
          },
      .onClose =
          [ev](const WebSocketPtr&, uint16_t code, std::string_view reason) {
            ev->update([&] {
              ev->closed.emplace(code, std::string(reason));
              ev->closedAt = MonoClock::now();
            });
          },
      .onPong =
          [ev](const WebSocketPtr&, std::string_view payload) {
            ev->update([&] { ev->pongs.emplace_back(payload); });
          },
  };
}

// The server's behaviour: echo, except for a few commands.
void serverMessage(const WebSocketPtr& ws, MessageType type, std::string_view payload) {
  if (payload == "throw") throw 42;
  if (payload == "flood") {
    // Messages until the output is past its limit; the count goes back.
    int sent = 1;
    while (ws->sendBinary(std::string(256 * 1024, 'f')) != SendResult::kFull) ++sent;
    (void)ws->sendText("sent " + std::to_string(sent));
    return;
  }
  if (payload == "close-me") {
    ws->close(4001, "asked to");
    return;
  }
  (void)ws->send(type, payload);
}

// One unmasked server frame: {opcode, payload}; opcode -1 on EOF.
std::pair<int, std::string> readServerFrame(BlockingClient& client) {
  const std::string head = client.recvExactly(2);
  if (head.size() < 2) return {-1, {}};
  size_t length = static_cast<uint8_t>(head[1]) & 0x7f;
  if (length == 126) {
    const std::string ext = client.recvExactly(2);
    length = (static_cast<uint8_t>(ext[0]) << 8) | static_cast<uint8_t>(ext[1]);
  } else if (length == 127) {
    const std::string ext = client.recvExactly(8);
    length = 0;
    for (const char c : ext) length = (length << 8) | static_cast<uint8_t>(c);
  }
  return {static_cast<uint8_t>(head[0]) & 0x0f, client.recvExactly(length)};
}

uint16_t closeCodeOf(const std::string& payload) {
  if (payload.size() < 2) return close_code::kNoStatus;
  return static_cast<uint16_t>((static_cast<uint8_t>(payload[0]) << 8) |
                               static_cast<uint8_t>(payload[1]));
}

class WebSocketTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    serverThread_ = std::make_unique<EventLoopThread>(nullptr, "ws-server", GetParam());
    serverLoop_ = serverThread_->startLoop();
    clientThread_ = std::make_unique<EventLoopThread>(nullptr, "ws-client", GetParam());
    clientLoop_ = clientThread_->startLoop();
  }

  void TearDown() override {
    if (clientLoop_ != nullptr) {
      runSync(clientLoop_, [this] {
        for (auto& ev : clients_) {
          if (ev->ws) ev->ws->forceClose();
          ev->ws.reset();
        }
      });
    }
    if (serverLoop_ != nullptr) {
      runSync(serverLoop_, [this] {
        std::lock_guard lock(serverEvents_->mutex);
        serverSockets_.clear();
      });
    }
    if (server_) runSync(serverLoop_, [this] { server_.reset(); });
    clientThread_.reset();
    serverThread_.reset();
  }

  void startServer(Options options = {}, http::HttpServer::Options http = {}) {
    runSync(serverLoop_, [&] {
      server_ = std::make_unique<http::HttpServer>(serverLoop_, InetAddress("127.0.0.1", 0),
                                                   "ws-test", http);
      Handlers handlers = recordInto(serverEvents_);
      handlers.onOpen = [this](const WebSocketPtr& ws) {
        serverEvents_->update([&] { serverSockets_.push_back(ws); });
      };
      handlers.onMessage = serverMessage;
      handlers.onDrain = [ev = serverEvents_](const WebSocketPtr&) {
        ev->update([&] { ev->drained = true; });
      };
      serve(*server_, "/ws", options, handlers);
      server_->start();
      port_ = server_->listenAddress().port();
    });
  }

  std::string url(std::string_view scheme = "ws", std::string_view path = "/ws") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }

  // A libnet client; waits until it is open or has failed.
  std::shared_ptr<Events> connectClient(ClientOptions options = {}, std::string target = {}) {
    auto ev = std::make_shared<Events>();
    clients_.push_back(ev);
    if (target.empty()) target = url();
    runSync(clientLoop_, [&] {
      connect(clientLoop_, target, options, recordInto(ev),
              [ev](const std::string& why) { ev->update([&] { ev->error = why; }); });
    });
    EXPECT_TRUE(ev->waitFor([&] { return ev->opened || ev->error; }));
    return ev;
  }

  std::shared_ptr<Events> openClient(ClientOptions options = {}) {
    auto ev = connectClient(std::move(options));
    EXPECT_TRUE(ev->opened) << ev->error.value_or("");
    return ev;
  }

  SendResult sendFrom(const std::shared_ptr<Events>& ev, MessageType type, std::string_view data,
                      size_t fragmentSize = 0) {
    return runSync(clientLoop_, [&] { return ev->ws->send(type, data, fragmentSize); });
  }

  // Sends and waits for the echo; returns it.
  std::pair<MessageType, std::string> roundTrip(const std::shared_ptr<Events>& ev, MessageType type,
                                                std::string_view data, size_t fragmentSize = 0) {
    const size_t before = runSync(clientLoop_, [&] { return ev->messages.size(); });
    EXPECT_NE(sendFrom(ev, type, data, fragmentSize), SendResult::kClosed);
    EXPECT_TRUE(ev->waitFor([&] { return ev->messages.size() > before; }));
    std::lock_guard lock(ev->mutex);
    if (ev->messages.size() <= before) return {};
    return ev->messages[before];
  }

  // A hand-made client that has done its handshake.
  std::unique_ptr<BlockingClient> rawClient(int rcvbuf = 0) {
    auto client = std::make_unique<BlockingClient>(InetAddress("127.0.0.1", port_), rcvbuf);
    EXPECT_TRUE(client->sendAll(upgradeRequest()));
    readUpgradeHead(*client);
    return client;
  }

  std::unique_ptr<EventLoopThread> serverThread_;
  std::unique_ptr<EventLoopThread> clientThread_;
  EventLoop* serverLoop_ = nullptr;
  EventLoop* clientLoop_ = nullptr;
  std::unique_ptr<http::HttpServer> server_;
  uint16_t port_ = 0;
  std::shared_ptr<Events> serverEvents_ = std::make_shared<Events>();
  std::vector<WebSocketPtr> serverSockets_;  // under serverEvents_->mutex
  std::vector<std::shared_ptr<Events>> clients_;
};

TEST_P(WebSocketTest, EchoesTextBinaryAndEmptyMessages) {
  startServer();
  auto client = openClient();
  EXPECT_EQ(roundTrip(client, MessageType::kText, "hello"),
            std::make_pair(MessageType::kText, std::string("hello")));
  EXPECT_EQ(roundTrip(client, MessageType::kBinary, std::string("\0\xff", 2)),
            std::make_pair(MessageType::kBinary, std::string("\0\xff", 2)));
  EXPECT_EQ(roundTrip(client, MessageType::kText, ""),
            std::make_pair(MessageType::kText, std::string()));
  EXPECT_EQ(roundTrip(client, MessageType::kBinary, ""),
            std::make_pair(MessageType::kBinary, std::string()));
}

TEST_P(WebSocketTest, SixteenMiBFragmentedBothWaysWithAndWithoutDeflate) {
  Options options;
  options.deflate.enabled = true;
  options.fragmentSize = kMiB;  // the server's echo goes out in fragments too
  startServer(options);
  const std::string big = test::randomBytes(16 * kMiB, 7);
  for (const bool deflate : {false, true}) {
    ClientOptions clientOptions;
    clientOptions.ws.deflate.enabled = deflate;
    auto client = openClient(clientOptions);
    EXPECT_EQ(runSync(clientLoop_, [&] { return client->ws->deflate(); }), deflate);
    const auto echoed = roundTrip(client, MessageType::kBinary, big, kMiB);
    EXPECT_EQ(echoed.first, MessageType::kBinary);
    EXPECT_TRUE(echoed.second == big) << "deflate " << deflate;
    const std::string text(16 * kMiB, 'a');  // compresses well
    EXPECT_TRUE(roundTrip(client, MessageType::kText, text, 3 * kMiB).second == text);
  }
}

TEST_P(WebSocketTest, APingIsAnsweredWithItsPayload) {
  startServer();
  auto client = openClient();
  EXPECT_EQ(runSync(clientLoop_, [&] { return client->ws->ping("are you there"); }),
            SendResult::kQueued);
  ASSERT_TRUE(client->waitFor([&] { return !client->pongs.empty(); }));
  EXPECT_EQ(client->pongs[0], "are you there");
  EXPECT_THROW(runSync(clientLoop_, [&] { return client->ws->ping(std::string(126, 'p')); }),
               std::invalid_argument);
}

TEST_P(WebSocketTest, EverySendableCloseCodeAndItsReasonReachTheServer) {
  startServer();
  std::vector<uint16_t> codes = {1000, 1001, 1002, 1003, 3000, 3999, 4000, 4999};
  for (uint16_t code = 1007; code <= 1014; ++code) codes.push_back(code);
  for (const uint16_t code : codes) {
    auto client = openClient();
    serverEvents_->update([&] { serverEvents_->closed.reset(); });
    const std::string reason = "reason " + std::to_string(code);
    runSync(clientLoop_, [&] { client->ws->close(code, reason); });
    ASSERT_TRUE(client->waitFor([&] { return client->closed.has_value(); })) << code;
    EXPECT_EQ(client->closed->first, code);  // the server echoed it
    ASSERT_TRUE(serverEvents_->waitFor([&] { return serverEvents_->closed.has_value(); }));
    EXPECT_EQ(serverEvents_->closedNow(), std::make_pair(code, reason));
  }
  auto client = openClient();
  EXPECT_THROW(runSync(clientLoop_, [&] { client->ws->close(1005); }), std::invalid_argument);
  EXPECT_THROW(runSync(clientLoop_, [&] { client->ws->close(1006); }), std::invalid_argument);
}

TEST_P(WebSocketTest, WssWithACertificateMadeForTheTest) {
  test::TestPki pki;
  http::HttpServer::Options http;
  http.layer = tls::newLayer(tls::Context::newServer(
      {.certChainFile = pki.serverCertFile(), .keyFile = pki.serverKeyFile()}));
  startServer({}, http);
  ClientOptions trusted;
  trusted.caFile = pki.caFile();
  auto client = connectClient(trusted, url("wss"));
  ASSERT_TRUE(client->opened) << client->error.value_or("");
  EXPECT_EQ(roundTrip(client, MessageType::kText, "over TLS").second, "over TLS");
  ClientOptions untrusted;
  untrusted.caFile = pki.otherCaFile();
  auto refused = connectClient(untrusted, url("wss"));
  ASSERT_TRUE(refused->error.has_value());
  EXPECT_EQ(refused->error->rfind("TLS handshake with 127.0.0.1:" + std::to_string(port_) +
                                      " failed: certificate verify failed: ",
                                  0),
            0u)
      << *refused->error;
}

TEST_P(WebSocketTest, ACallbackThatThrowsAnIntClosesWith1011AndOthersAreServed) {
  startServer();
  auto thrower = openClient();
  auto other = openClient();
  EXPECT_NE(sendFrom(thrower, MessageType::kText, "throw"), SendResult::kClosed);
  ASSERT_TRUE(thrower->waitFor([&] { return thrower->closed.has_value(); }));
  EXPECT_EQ(thrower->closed->first, close_code::kInternalError);
  EXPECT_EQ(roundTrip(other, MessageType::kText, "still here").second, "still here");
  EXPECT_EQ(roundTrip(openClient(), MessageType::kText, "new").second, "new");
}

TEST_P(WebSocketTest, AReceiverErrorClosesWithItsCode) {
  Options options;
  options.maxMessageBytes = 1000;
  startServer(options);
  auto client = openClient();
  EXPECT_NE(sendFrom(client, MessageType::kBinary, std::string(2000, 'x')), SendResult::kClosed);
  ASSERT_TRUE(client->waitFor([&] { return client->closed.has_value(); }));
  EXPECT_EQ(client->closed->first, close_code::kMessageTooBig);
}

TEST_P(WebSocketTest, APeerThatNeverReadsIsHeldToTheOutputLimit) {
  http::HttpServer::Options http;
  http.maxQueuedOutput = 256 * 1024;
  startServer({}, http);
  auto reader = rawClient(/*rcvbuf=*/4096);
  ::fcntl(reader->fd(), F_SETFL, ::fcntl(reader->fd(), F_GETFL) | O_NONBLOCK);
  const std::string frame = clientFrame(2, std::string(60000, 'z'));
  size_t sent = 0;
  // Sends until the kernel takes no more: the server has stopped reading.
  for (int i = 0; i < 2000; ++i) {
    const ssize_t n = ::send(reader->fd(), frame.data(), frame.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  EXPECT_LT(sent, 2000 * frame.size()) << "the server never pushed back";
  ASSERT_TRUE(serverEvents_->waitFor([&] { return serverSockets_.size() == 1; }));
  const WebSocketPtr held = [&] {
    std::lock_guard lock(serverEvents_->mutex);
    return serverSockets_[0];
  }();
  const size_t queued = runSync(serverLoop_, [&] { return held->queuedOutputBytes(); });
  // The limit, plus the echoes of one read's worth of input.
  EXPECT_LE(queued, http.maxQueuedOutput + 512 * 1024);
  EXPECT_EQ(roundTrip(openClient(), MessageType::kText, "served").second, "served");
}

TEST_P(WebSocketTest, APeerThatNeverCompletesTheCloseIsDroppedAfterCloseTimeout) {
  Options options;
  options.closeTimeout = 300ms;
  startServer(options);
  auto client = rawClient();
  const MonoTime start = MonoClock::now();
  ASSERT_TRUE(client->sendAll(clientFrame(1, "close-me")));
  const auto [opcode, payload] = readServerFrame(*client);
  EXPECT_EQ(opcode, 8);
  EXPECT_EQ(closeCodeOf(payload), 4001);
  // No close frame back: the server drops the connection at its timeout.
  ASSERT_TRUE(serverEvents_->waitFor([&] { return serverEvents_->closed.has_value(); }));
  EXPECT_EQ(serverEvents_->closedNow()->first, close_code::kAbnormal);
  EXPECT_GE(serverEvents_->closedAtNow() - start, options.closeTimeout);
}

TEST_P(WebSocketTest, ASendPastTheOutputLimitSaysFullAndDrainFollows) {
  http::HttpServer::Options http;
  http.maxQueuedOutput = 1024 * 1024;
  startServer({}, http);
  auto client = openClient();
  EXPECT_NE(sendFrom(client, MessageType::kText, "flood"), SendResult::kClosed);
  // 1 MiB of 256 KiB messages fills the output: four or five of them.
  ASSERT_TRUE(client->waitFor([&] {
    return !client->messages.empty() && client->messages.back().first == MessageType::kText;
  }));
  const std::string& count = client->messages.back().second;
  EXPECT_TRUE(count == "sent 4" || count == "sent 5") << count;
  ASSERT_TRUE(serverEvents_->waitFor([&] { return serverEvents_->drained; }));
}

TEST_P(WebSocketTest, AKeepAlivePingThatIsNeverAnsweredDropsThePeer) {
  Options options;
  options.pingInterval = 100ms;
  options.pingTimeout = 200ms;
  startServer(options);
  auto client = rawClient();
  const auto [opcode, payload] = readServerFrame(*client);
  EXPECT_EQ(opcode, 9);  // a ping, after 100 ms of silence
  ASSERT_TRUE(serverEvents_->waitFor([&] { return serverEvents_->closed.has_value(); }));
  EXPECT_EQ(serverEvents_->closedNow()->first, close_code::kAbnormal);
  // A libnet client answers pings by itself and stays open meanwhile.
  auto answering = openClient();
  EXPECT_EQ(roundTrip(answering, MessageType::kText, "alive").second, "alive");
}

TEST_P(WebSocketTest, FramesPipelinedBehindTheUpgradeRequestAreRead) {
  startServer();
  BlockingClient client(InetAddress("127.0.0.1", port_));
  ASSERT_TRUE(client.sendAll(upgradeRequest() + clientFrame(1, "one") + clientFrame(2, "two") +
                             clientFrame(1, "thr", false) + clientFrame(0, "ee")));
  readUpgradeHead(client);
  EXPECT_EQ(readServerFrame(client), std::make_pair(1, std::string("one")));
  EXPECT_EQ(readServerFrame(client), std::make_pair(2, std::string("two")));
  EXPECT_EQ(readServerFrame(client), std::make_pair(1, std::string("three")));
}

TEST_P(WebSocketTest, AnswersToRequestsPipelinedBeforeTheUpgradeGoFirst) {
  startServer();
  BlockingClient client(InetAddress("127.0.0.1", port_));
  ASSERT_TRUE(client.sendAll("GET /plain HTTP/1.1\r\nHost: x\r\n\r\n" + upgradeRequest() +
                             clientFrame(1, "after")));
  std::string head;
  auto headDone = [&] {
    const size_t at = head.find("101 Switching");
    return at != std::string::npos && head.find("\r\n\r\n", at) != std::string::npos;
  };
  while (!headDone()) {
    const std::string more = client.recvExactly(1);
    ASSERT_FALSE(more.empty()) << head;
    head += more;
  }
  // The 404 for /plain (no HTTP handler in this server) came before the 101.
  EXPECT_EQ(head.rfind("HTTP/1.1 404 ", 0), 0u) << head;
  EXPECT_EQ(readServerFrame(client), std::make_pair(1, std::string("after")));
}

TEST_P(WebSocketTest, AnUpgradeHandlerThatThrowsAnswers500AndTheServerGoesOn) {
  runSync(serverLoop_, [&] {
    server_ = std::make_unique<http::HttpServer>(serverLoop_, InetAddress("127.0.0.1", 0), "hook");
    server_->setHandler([](const http::HttpRequest&, http::HttpResponse* response) {
      response->setBody("plain\n");
    });
    server_->setUpgradeHandler([](const http::HttpRequest& request, const TcpConnectionPtr&,
                                  Buffer*, http::HttpResponse*) {
      if (request.path() == "/throw") throw 7;
      return http::HttpServer::Upgrade::kDeclined;  // to the handler
    });
    server_->start();
    port_ = server_->listenAddress().port();
  });
  const std::string upgrade = "Host: x\r\nUpgrade: something\r\nConnection: Upgrade\r\n\r\n";
  BlockingClient thrower(InetAddress("127.0.0.1", port_));
  ASSERT_TRUE(thrower.sendAll("GET /throw HTTP/1.1\r\n" + upgrade));
  bool eof = false;
  const std::string answer = thrower.recvUntilEof(&eof);
  EXPECT_EQ(answer.rfind("HTTP/1.1 500 ", 0), 0u) << answer;
  EXPECT_TRUE(eof);
  BlockingClient declined(InetAddress("127.0.0.1", port_));
  ASSERT_TRUE(
      declined.sendAll("GET /other HTTP/1.1\r\nHost: x\r\nUpgrade: something\r\nConnection: "
                       "Upgrade, close\r\n\r\n"));
  const std::string plain = declined.recvUntilEof(&eof);
  EXPECT_EQ(plain.rfind("HTTP/1.1 200 ", 0), 0u) << plain;
  EXPECT_NE(plain.find("plain\n"), std::string::npos) << plain;
}

TEST_P(WebSocketTest, ABadUpgradeIsAnsweredWithTheStatusOfTheCheck) {
  startServer();
  BlockingClient client(InetAddress("127.0.0.1", port_));
  ASSERT_TRUE(client.sendAll(upgradeRequest("12")));
  bool eof = false;
  const std::string answer = client.recvUntilEof(&eof);
  EXPECT_EQ(answer.rfind("HTTP/1.1 426 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("Sec-WebSocket-Version: 13"), std::string::npos) << answer;
}

TEST_P(WebSocketTest, ClientErrorsAreValuesWithAReason) {
  startServer();
  auto notFound = connectClient({}, url("ws", "/nope"));
  ASSERT_TRUE(notFound->error.has_value());
  EXPECT_NE(notFound->error->find("404 Not Found"), std::string::npos) << *notFound->error;

  // A port that refuses: bound, not listening.
  UniqueFd idle(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const InetAddress any("127.0.0.1", 0);
  ASSERT_EQ(::bind(idle.get(), any.sockAddr(), any.sockLen()), 0);
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  ::getsockname(idle.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  const std::string refusedUrl = "ws://127.0.0.1:" + std::to_string(ntohs(bound.sin_port)) + "/";
  auto refused = connectClient({}, refusedUrl);
  ASSERT_TRUE(refused->error.has_value());
  EXPECT_NE(refused->error->find("refused"), std::string::npos) << *refused->error;

  EXPECT_THROW(connectClient({}, "http://127.0.0.1:1/"), std::invalid_argument);
}

// A resolver for which no name exists: every lookup fails with NXDOMAIN,
// from the loop's queue as a real one would.
class NoSuchNames : public NameResolver {
 public:
  explicit NoSuchNames(EventLoop* loop) : loop_(loop) {}
  QueryPtr lookup(std::string_view host, uint16_t, Family, Callback cb) override {
    loop_->queueInLoop([cb = std::move(cb), name = std::string(host)] {
      cb(ResolveResult{{}, ResolveError{ResolveErrc::kNotFound, name + ": NXDOMAIN"}});
    });
    return nullptr;
  }

 private:
  EventLoop* loop_;
};

// A resolver under which every name is 127.0.0.1 (and has no IPv6 address).
class EveryNameIsLoopback : public NameResolver {
 public:
  explicit EveryNameIsLoopback(EventLoop* loop) : loop_(loop) {}
  QueryPtr lookup(std::string_view, uint16_t port, Family family, Callback cb) override {
    std::vector<InetAddress> addresses;
    if (family != Family::kIPv6) addresses.emplace_back("127.0.0.1", port);
    loop_->queueInLoop([cb = std::move(cb), addresses = std::move(addresses)] {
      cb(ResolveResult{addresses, {}});
    });
    return nullptr;
  }

 private:
  EventLoop* loop_;
};

TEST_P(WebSocketTest, WssToACertificateForAnotherNameSaysWhy) {
  test::TestPki pki;  // the server's certificate names localhost, 127.0.0.1 and ::1
  http::HttpServer::Options http;
  http.layer = tls::newLayer(tls::Context::newServer(
      {.certChainFile = pki.serverCertFile(), .keyFile = pki.serverKeyFile()}));
  startServer({}, http);
  ClientOptions options;
  options.caFile = pki.caFile();
  options.resolver = std::make_shared<EveryNameIsLoopback>(clientLoop_);
  const std::string hostPort = "other.example:" + std::to_string(port_);
  auto refused = connectClient(options, "wss://" + hostPort + "/ws");
  ASSERT_TRUE(refused->error.has_value());
  EXPECT_FALSE(refused->opened);
  EXPECT_EQ(lowered(*refused->error), "tls handshake with " + hostPort +
                                          " failed: certificate verify failed: hostname mismatch");
}

TEST_P(WebSocketTest, ANameThatDoesNotResolveIsAnError) {
  ClientOptions options;
  options.resolver = std::make_shared<NoSuchNames>(clientLoop_);
  auto client = connectClient(options, "ws://no.such.test:80/");
  ASSERT_TRUE(client->error.has_value());
  EXPECT_NE(client->error->find("NXDOMAIN"), std::string::npos) << *client->error;
}

TEST_P(WebSocketTest, AWrongAcceptKeyIsRefused) {
  // A server that answers every request with a 101 for another key.
  TcpServer* liar = nullptr;
  std::unique_ptr<TcpServer> owner;
  runSync(serverLoop_, [&] {
    owner = std::make_unique<TcpServer>(serverLoop_, InetAddress("127.0.0.1", 0), "liar");
    liar = owner.get();
    liar->setMessageCallback([](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
      buf->retrieveAll();
      conn->send(makeUpgradeResponse("c29tZSBvdGhlciBrZXkhIQ=="));
    });
    liar->start();
    port_ = liar->listenAddress().port();
  });
  auto client = connectClient({}, url());
  ASSERT_TRUE(client->error.has_value());
  EXPECT_NE(client->error->find("Sec-WebSocket-Accept"), std::string::npos) << *client->error;
  runSync(serverLoop_, [&] { owner.reset(); });
}

TEST_P(WebSocketTest, TheCoroutineClientTalksToTheServer) {
  startServer();
  struct Outcome {
    std::string error, echo;
    uint16_t closeCode = 0;
  };
  auto outcome = std::make_shared<Outcome>();
  auto done = std::make_shared<Events>();
  auto run = [](EventLoop* loop, std::string target, std::shared_ptr<Outcome> out,
                std::shared_ptr<Events> ev) -> coro::Task<> {
    CoroConnectResult c = co_await connect(loop, target);
    if (c) {
      co_await c.socket.send(MessageType::kText, "from a coroutine");
      Message m = co_await c.socket.read();
      out->echo = m.payload;
      out->closeCode = co_await c.socket.close(3001, "done");
    } else {
      out->error = c.error;
    }
    ev->update([&] { ev->opened = true; });
  };
  runSync(clientLoop_, [&] { coro::spawn(clientLoop_, run(clientLoop_, url(), outcome, done)); });
  ASSERT_TRUE(done->waitFor([&] { return done->opened; }));
  EXPECT_EQ(outcome->error, "");
  EXPECT_EQ(outcome->echo, "from a coroutine");
  EXPECT_EQ(outcome->closeCode, 3001);
}

INSTANTIATE_TEST_SUITE_P(Backends, WebSocketTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::ws
