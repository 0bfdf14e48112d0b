// grpc::Channel, ClientCall and the generated Stub against libnet's own
// grpc::Server on another loop thread (h2c, and TLS with ALPN), on every
// backend: each kind in its callback and coroutine forms, metadata both
// ways, status with any bytes in its message, deadlines and cancellation
// (the server sees the cancel), withTimeout/withStop around a coroutine
// call, gzip, the receive limit, a server that is down (UNAVAILABLE, or
// waiting for it), a server restarted on the same port, and HTTP/2 answers
// that are not gRPC.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/coro/Cancel.h"
#include "net/coro/Spawn.h"
#include "net/coro/Task.h"
#include "net/grpc/Channel.h"
#include "net/grpc/ClientCall.h"
#include "net/grpc/Server.h"
#include "net/http/HttpServer.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"
#include "tests/grpc/client/client_test.libnet.h"
#include "tests/net/TestUtil.h"
#include "tests/net/tls/TestPki.h"

namespace libnet::grpc::test {
namespace {

using libnet::test::runSync;
using libnet::test::waitUntil;
using libnet::test::client::Msg;
using TestService = libnet::test::client::Test;
using namespace std::chrono_literals;

Msg msg(std::string text, int count = 0) {
  Msg m;
  m.set_text(std::move(text));
  m.set_count(count);
  return m;
}

class Impl : public TestService::Service {
 public:
  std::atomic<int> cancels{0};
  std::atomic<int> sleeping{0};

  void Echo(ServerStreamPtr<Msg, Msg> call) override {
    for (const auto& [key, value] : call->call().clientMetadata()) {
      if (!key.starts_with("x-")) continue;
      call->call().addInitialMetadata(key, value);
      call->call().addTrailingMetadata("t-" + key, value);
    }
    const Msg& request = call->request();
    if (request.code() != 0) {
      call->finish(Status(static_cast<StatusCode>(request.code()), request.text()));
      return;
    }
    call->finish(request);
  }
  void Sleep(ServerStreamPtr<Msg, Msg> call) override {
    ++sleeping;
    call->onCancel([this, call] { ++cancels; });
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back(std::move(call));
  }
  void Count(ServerStreamPtr<Msg, Msg> call) override {
    for (int i = 0; i < call->request().count(); ++i) call->write(msg(std::to_string(i)));
    call->finish(Status());
  }
  void Big(ServerStreamPtr<Msg, Msg> call) override {
    call->call().setCompression(call->request().text() == "gzip");
    Msg reply;
    reply.set_blob(std::string(static_cast<size_t>(call->request().count()), 'b'));
    call->finish(reply);
  }
  void Sum(ServerStreamPtr<Msg, Msg> call) override {
    auto joined = std::make_shared<std::string>();
    call->onMessage([joined](Msg m) {
      if (!joined->empty()) *joined += "+";
      *joined += m.text();
    });
    call->onHalfClose([call, joined] { call->finish(msg(*joined)); });
  }
  void Chat(ServerStreamPtr<Msg, Msg> call) override {
    call->onMessage([call](Msg m) { call->write(m); });
    call->onHalfClose([call] { call->finish(Status()); });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& call : held_) call->finish(Status(StatusCode::kAborted, "released"));
    held_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<ServerStreamPtr<Msg, Msg>> held_;
};

// What a callback call ended with, read from the test thread.
template <class T>
struct Slot {
  std::mutex mu;
  std::optional<T> value;
  void set(T v) {
    std::lock_guard<std::mutex> lock(mu);
    value.emplace(std::move(v));
  }
  std::optional<T> wait() {
    waitUntil([this] {
      std::lock_guard<std::mutex> lock(mu);
      return value.has_value();
    });
    std::lock_guard<std::mutex> lock(mu);
    return value;
  }
};

struct Reply {
  Status status;
  Msg message;
};

class ClientTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    serverThread_ = std::make_unique<EventLoopThread>(nullptr, "grpc-server", GetParam());
    serverLoop_ = serverThread_->startLoop();
    clientThread_ = std::make_unique<EventLoopThread>(nullptr, "grpc-client", GetParam());
    clientLoop_ = clientThread_->startLoop();
  }

  void TearDown() override {
    // A backend skipped in SetUp() started no loop.
    if (clientLoop_ != nullptr) runSync(clientLoop_, [&] { channel_.reset(); });
    if (serverLoop_ != nullptr) stopServer();
    clientThread_.reset();
    serverThread_.reset();
  }

  void startServer(uint16_t port = 0, bool tls = false) {
    runSync(serverLoop_, [&] {
      http::HttpServer::Options options;
      if (tls) {
        tls::Context::ServerOptions serverTls;
        serverTls.certChainFile = pki_.serverCertFile();
        serverTls.keyFile = pki_.serverKeyFile();
        serverTls.alpn = {"h2"};
        options.layer = tls::newLayer(tls::Context::newServer(serverTls));
      }
      http_ =
          std::make_unique<http::HttpServer>(serverLoop_, InetAddress(port, true), "grpc", options);
      server_ = std::make_unique<Server>(*http_, Server::Options{});
      server_->addService(&impl_);
      http_->start();
      port_ = http_->listenAddress().inet()->port();
    });
  }

  void stopServer() {
    impl_.release();
    runSync(serverLoop_, [&] {
      server_.reset();
      http_.reset();
    });
  }

  std::shared_ptr<Channel> makeChannel(Channel::Options options = {}) {
    if (options.initialBackoff == std::chrono::seconds(1)) options.initialBackoff = 50ms;
    channel_ = Channel::create(clientLoop_, "127.0.0.1:" + std::to_string(port_), options);
    return channel_;
  }

  Reply echo(const std::shared_ptr<Channel>& channel, const Msg& request,
             ClientCallOptions options = {}) {
    auto slot = std::make_shared<Slot<Reply>>();
    TestService::Stub(channel).Echo(
        request,
        [slot](Status status, Msg reply) {
          slot->set({std::move(status), reply});
        },
        std::move(options));
    return slot->wait().value_or(Reply{Status(StatusCode::kUnknown, "test: no answer"), {}});
  }

  // Runs the coroutine `make()` on the client loop and waits for its value.
  template <class T>
  std::optional<T> runCoro(std::function<coro::Task<T>()> make,
                           std::stop_token stop = std::stop_token()) {
    auto slot = std::make_shared<Slot<T>>();
    runSync(clientLoop_, [&] {
      coro::spawn(
          clientLoop_,
          [](std::function<coro::Task<T>()> make, std::shared_ptr<Slot<T>> slot) -> coro::Task<> {
            slot->set(co_await make());
          }(std::move(make), slot),
          stop);
    });
    return slot->wait();
  }

  libnet::test::TestPki pki_;
  Impl impl_;
  std::unique_ptr<EventLoopThread> serverThread_;
  std::unique_ptr<EventLoopThread> clientThread_;
  EventLoop* serverLoop_ = nullptr;
  EventLoop* clientLoop_ = nullptr;
  std::unique_ptr<http::HttpServer> http_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
  std::shared_ptr<Channel> channel_;
};

TEST_P(ClientTest, UnaryCallbackAndCoroutine) {
  startServer();
  auto channel = makeChannel();
  const Reply reply = echo(channel, msg("hello"));
  ASSERT_TRUE(reply.status.ok()) << reply.status.toString();
  EXPECT_EQ(reply.message.text(), "hello");

  const auto result = runCoro<Result<Msg>>([channel]() -> coro::Task<Result<Msg>> {
    co_return co_await TestService::Stub(channel).Echo(msg("coro"));
  });
  ASSERT_TRUE(result && result->ok()) << (result ? result->status().toString() : "none");
  EXPECT_EQ(result->value().text(), "coro");
  EXPECT_EQ(channel->state(), Channel::State::kReady);
  EXPECT_EQ(channel->connectionsMade(), 1U);
}

TEST_P(ClientTest, UnaryFromManyThreadsOneConnection) {
  startServer();
  auto channel = makeChannel();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const std::string text = std::to_string(t) + "/" + std::to_string(i);
        const Reply reply = echo(channel, msg(text));
        if (reply.status.ok() && reply.message.text() == text) ++ok;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 100);
  EXPECT_EQ(channel->connectionsMade(), 1U);
}

TEST_P(ClientTest, ServerStreaming) {
  startServer();
  auto channel = makeChannel();
  auto texts = std::make_shared<std::vector<std::string>>();
  auto done = std::make_shared<Slot<Status>>();
  auto stream = TestService::Stub(channel).Count(
      msg("", 5), {.onMessage = [texts](Msg m) { texts->push_back(m.text()); },
                   .onFinish = [done](const Status& s, const Metadata&) { done->set(s); }});
  ASSERT_TRUE(done->wait().value_or(Status(StatusCode::kUnknown, "")).ok());
  EXPECT_EQ(*texts, (std::vector<std::string>{"0", "1", "2", "3", "4"}));

  const auto joined = runCoro<std::string>([channel]() -> coro::Task<std::string> {
    auto call = TestService::Stub(channel).Count(msg("", 300));
    std::string all;
    int n = 0;
    while (std::optional<Msg> m = co_await call.read()) {
      if (m->text() != std::to_string(n++)) co_return "out of order at " + m->text();
    }
    const Status status = co_await call.finish();
    co_return status.toString() + " " + std::to_string(n);
  });
  EXPECT_EQ(joined.value_or(""), "OK 300");
}

TEST_P(ClientTest, ClientStreamingAndBidi) {
  startServer();
  auto channel = makeChannel();
  auto done = std::make_shared<Slot<std::string>>();
  auto reply = std::make_shared<std::string>();
  auto sum = TestService::Stub(channel).Sum(
      {.onMessage = [reply](Msg m) { *reply = m.text(); },
       .onFinish = [done, reply](const Status& s,
                                 const Metadata&) { done->set(s.toString() + " " + *reply); }});
  for (const char* text : {"a", "b", "c"}) sum->write(msg(text));
  sum->halfClose();
  EXPECT_EQ(done->wait().value_or(""), "OK a+b+c");

  const auto chat = runCoro<std::string>([channel]() -> coro::Task<std::string> {
    auto call = TestService::Stub(channel).Chat();
    std::string seen;
    for (int i = 0; i < 50; ++i) {
      if (!co_await call.write(msg(std::to_string(i)))) co_return "write failed";
      std::optional<Msg> back = co_await call.read();
      if (!back || back->text() != std::to_string(i)) co_return "bad echo at " + std::to_string(i);
    }
    call.halfClose();
    if (co_await call.read()) co_return "a message after the end";
    co_return (co_await call.finish()).toString();
  });
  EXPECT_EQ(chat.value_or(""), "OK");

  const auto coroSum = runCoro<std::string>([channel]() -> coro::Task<std::string> {
    auto call = TestService::Stub(channel).Sum();
    co_await call.write(msg("x"));
    co_await call.write(msg("y"));
    call.halfClose();
    std::optional<Msg> m = co_await call.read();
    const Status status = co_await call.finish();
    co_return status.toString() + " " + (m ? m->text() : "none");
  });
  EXPECT_EQ(coroSum.value_or(""), "OK x+y");
}

// Runs Echo with `request` and `metadata`; the initial metadata (if any
// came) and the end.
struct EchoOutcome {
  std::optional<Metadata> initial;
  std::optional<std::pair<Status, Metadata>> end;
};

EchoOutcome rawEcho(const std::shared_ptr<Channel>& channel, const Msg& request,
                    Metadata metadata) {
  auto initial = std::make_shared<Slot<Metadata>>();
  auto finished = std::make_shared<Slot<std::pair<Status, Metadata>>>();
  auto call =
      ClientCall::start(channel, "/libnet.test.client.Test/Echo", {.metadata = std::move(metadata)},
                        {.onInitialMetadata = [initial](const Metadata& m) { initial->set(m); },
                         .onFinish =
                             [finished](const Status& s, const Metadata& t) {
                               finished->set({s, t});
                             }});
  call->write(request.SerializeAsString());
  call->halfClose();
  EchoOutcome outcome;
  outcome.end = finished->wait();
  std::lock_guard<std::mutex> lock(initial->mu);
  outcome.initial = initial->value;
  return outcome;
}

// A write past writeHighWater whose bytes the connection takes at once (or
// that go with the stream as it starts): its writer must still hear that
// the output drained, whether or not the session's low mark was crossed.
TEST_P(ClientTest, WriteOverTheHighMarkResumesItsWriter) {
  startServer();
  auto channel = makeChannel({.writeHighWater = 16 * 1024});
  const auto sum = runCoro<std::string>([channel]() -> coro::Task<std::string> {
    std::string texts;
    for (int round = 0; round < 2; ++round) {  // connecting, then connected
      auto call = TestService::Stub(channel).Sum();
      Msg big = msg("big");
      big.set_blob(std::string(32 * 1024, 'b'));
      if (!co_await call.write(big)) co_return "write failed";
      co_await call.write(msg("small"));
      call.halfClose();
      std::optional<Msg> m = co_await call.read();
      const Status status = co_await call.finish();
      texts += status.toString() + " " + (m ? m->text() : "none") + ";";
    }
    co_return texts;
  });
  EXPECT_EQ(sum.value_or("no end"), "OK big+small;OK big+small;");
}

TEST_P(ClientTest, MetadataAndStatus) {
  startServer();
  auto channel = makeChannel();
  const std::string binary("\0\xff\x01 bytes", 9);
  const Metadata sent = {{"x-plain", "v1"}, {"x-data-bin", binary}};
  const EchoOutcome ok = rawEcho(channel, msg("fine"), sent);
  ASSERT_TRUE(ok.end && ok.initial);
  EXPECT_TRUE(ok.end->first.ok());
  ASSERT_NE(findMetadata(*ok.initial, "x-plain"), nullptr);
  EXPECT_EQ(*findMetadata(*ok.initial, "x-plain"), "v1");
  ASSERT_NE(findMetadata(*ok.initial, "x-data-bin"), nullptr);
  EXPECT_EQ(*findMetadata(*ok.initial, "x-data-bin"), binary);
  ASSERT_NE(findMetadata(ok.end->second, "t-x-data-bin"), nullptr);
  EXPECT_EQ(*findMetadata(ok.end->second, "t-x-data-bin"), binary);

  // An error without a message is a trailers-only answer: its metadata
  // comes as trailers; its grpc-message is percent-decoded.
  Msg failing = msg("caf\xc3\xa9 100% \r\n done");
  failing.set_code(static_cast<int>(StatusCode::kFailedPrecondition));
  const EchoOutcome bad = rawEcho(channel, failing, sent);
  ASSERT_TRUE(bad.end);
  EXPECT_EQ(bad.end->first.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(bad.end->first.message(), failing.text());
  ASSERT_NE(findMetadata(bad.end->second, "t-x-plain"), nullptr);
  EXPECT_EQ(*findMetadata(bad.end->second, "t-x-plain"), "v1");

  // A key the protocol keeps for itself is refused before anything is sent.
  EXPECT_EQ(echo(channel, msg("x"), {.metadata = {{"grpc-status", "0"}}}).status.code(),
            StatusCode::kInternal);
  EXPECT_EQ(echo(channel, msg("x"), {.metadata = {{"Upper", "v"}}}).status.code(),
            StatusCode::kInternal);
}

TEST_P(ClientTest, DeadlineCancelsTheCall) {
  startServer();
  auto channel = makeChannel();
  auto slot = std::make_shared<Slot<Reply>>();
  TestService::Stub(channel).Sleep(msg("zz"),
                                   [slot](Status s, Msg m) {
                                     slot->set({std::move(s), std::move(m)});
                                   },
                                   {.timeout = 200ms});
  const auto reply = slot->wait();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status.code(), StatusCode::kDeadlineExceeded);
  // The server hears of it (its own deadline or the RST_STREAM).
  EXPECT_TRUE(waitUntil([&] { return impl_.cancels.load() == 1; }));
}

TEST_P(ClientTest, CancelFromAnotherThread) {
  startServer();
  auto channel = makeChannel();
  auto finished = std::make_shared<Slot<Status>>();
  auto call = ClientCall::start(
      channel, "/libnet.test.client.Test/Sleep", {},
      {.onFinish = [finished](const Status& s, const Metadata&) { finished->set(s); }});
  call->write(msg("zz").SerializeAsString());
  call->halfClose();
  ASSERT_TRUE(waitUntil([&] { return impl_.sleeping.load() == 1; }));
  call->cancel();
  EXPECT_EQ(finished->wait().value_or(Status()).code(), StatusCode::kCancelled);
  EXPECT_TRUE(waitUntil([&] { return impl_.cancels.load() == 1; }));
  EXPECT_TRUE(call->finished());
  // The connection goes on.
  EXPECT_TRUE(echo(channel, msg("after")).status.ok());
}

TEST_P(ClientTest, CancelRacesCompletion) {
  startServer();
  auto channel = makeChannel();
  std::atomic<int> finishes{0};
  std::vector<std::shared_ptr<ClientCall>> calls;
  for (int i = 0; i < 200; ++i) {
    auto call = ClientCall::start(channel, "/libnet.test.client.Test/Echo", {},
                                  {.onFinish = [&finishes](const Status& s, const Metadata&) {
                                    if (s.ok() || s.code() == StatusCode::kCancelled) ++finishes;
                                  }});
    call->write(msg(std::to_string(i)).SerializeAsString());
    call->halfClose();
    calls.push_back(std::move(call));
  }
  std::thread canceller([&] {
    for (auto& call : calls) call->cancel();
  });
  canceller.join();
  EXPECT_TRUE(waitUntil([&] { return finishes.load() == 200; }));
  EXPECT_TRUE(echo(channel, msg("after")).status.ok());
}

TEST_P(ClientTest, CoroutineScopesCancelTheCall) {
  startServer();
  auto channel = makeChannel();
  const auto timed = runCoro<Status>([channel]() -> coro::Task<Status> {
    Result<Msg> r = co_await coro::withTimeout(100ms, TestService::Stub(channel).Sleep(msg("z")));
    co_return r.status();
  });
  ASSERT_TRUE(timed);
  EXPECT_EQ(timed->code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(waitUntil([&] { return impl_.cancels.load() == 1; }));

  std::stop_source stop;
  auto slot = std::make_shared<Slot<Status>>();
  runSync(clientLoop_, [&] {
    coro::spawn(
        clientLoop_,
        [](std::shared_ptr<Channel> channel, std::shared_ptr<Slot<Status>> slot) -> coro::Task<> {
          Result<Msg> r = co_await TestService::Stub(channel).Sleep(msg("z"));
          slot->set(r.status());
        }(channel, slot),
        stop.get_token());
  });
  ASSERT_TRUE(waitUntil([&] { return impl_.sleeping.load() == 2; }));
  stop.request_stop();
  EXPECT_EQ(slot->wait().value_or(Status()).code(), StatusCode::kCancelled);
  EXPECT_TRUE(waitUntil([&] { return impl_.cancels.load() == 2; }));
}

TEST_P(ClientTest, GzipAndReceiveLimit) {
  startServer();
  auto channel = makeChannel({.maxReceiveMessageBytes = 64 * 1024});
  Msg big = msg("gzip", 60000);
  big.set_blob(std::string(50000, 'q'));
  auto slot = std::make_shared<Slot<Reply>>();
  TestService::Stub(channel).Big(big,
                                 [slot](Status s, Msg m) {
                                   slot->set({std::move(s), std::move(m)});
                                 },
                                 {.compress = true});
  const auto reply = slot->wait();
  ASSERT_TRUE(reply && reply->status.ok()) << (reply ? reply->status.toString() : "none");
  EXPECT_EQ(reply->message.blob().size(), 60000U);

  auto over = std::make_shared<Slot<Reply>>();
  TestService::Stub(channel).Big(msg("", 100000), [over](Status s, Msg m) {
    over->set({std::move(s), std::move(m)});
  });
  EXPECT_EQ(over->wait().value_or(Reply{}).status.code(), StatusCode::kResourceExhausted);
  // A compressed one that inflates past the limit too.
  auto bomb = std::make_shared<Slot<Reply>>();
  TestService::Stub(channel).Big(msg("gzip", 100000), [bomb](Status s, Msg m) {
    bomb->set({std::move(s), std::move(m)});
  });
  EXPECT_EQ(bomb->wait().value_or(Reply{}).status.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(echo(channel, msg("after")).status.ok());
}

TEST_P(ClientTest, UnknownMethodIsUnimplemented) {
  startServer();
  auto channel = makeChannel();
  auto finished = std::make_shared<Slot<Status>>();
  auto call = ClientCall::start(
      channel, "/no.Such/Method", {},
      {.onFinish = [finished](const Status& s, const Metadata&) { finished->set(s); }});
  call->halfClose();
  EXPECT_EQ(finished->wait().value_or(Status()).code(), StatusCode::kUnimplemented);
}

TEST_P(ClientTest, ServerDownFailsOrWaits) {
  startServer();
  stopServer();  // port_ is free now: nothing listens there
  auto channel = makeChannel();
  EXPECT_EQ(echo(channel, msg("x")).status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(echo(channel, msg("x"), {.timeout = 300ms, .waitForReady = true}).status.code(),
            StatusCode::kDeadlineExceeded);
}

TEST_P(ClientTest, ReconnectsToARestartedServer) {
  startServer();
  auto channel = makeChannel();
  std::mutex mu;
  std::vector<Channel::State> states;
  channel->setStateCallback([&](Channel::State s) {
    std::lock_guard<std::mutex> lock(mu);
    states.push_back(s);
  });
  ASSERT_TRUE(echo(channel, msg("one")).status.ok());
  const uint16_t port = port_;
  stopServer();
  ASSERT_TRUE(waitUntil([&] { return channel->state() != Channel::State::kReady; }));
  // A waiting call is answered once the server is back on the same port.
  auto slot = std::make_shared<Slot<Reply>>();
  TestService::Stub(channel).Echo(msg("two"),
                                  [slot](Status s, Msg m) {
                                    slot->set({std::move(s), std::move(m)});
                                  },
                                  {.timeout = 10s, .waitForReady = true});
  startServer(port);
  const auto reply = slot->wait();
  ASSERT_TRUE(reply && reply->status.ok()) << (reply ? reply->status.toString() : "none");
  EXPECT_EQ(reply->message.text(), "two");
  EXPECT_EQ(channel->connectionsMade(), 2U);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_NE(std::find(states.begin(), states.end(), Channel::State::kReady), states.end());
}

TEST_P(ClientTest, Tls) {
  startServer(0, true);
  tls::Context::ClientOptions clientTls;
  clientTls.caFile = pki_.caFile();
  clientTls.alpn = {"h2"};
  auto channel = makeChannel({.tls = tls::Context::newClient(clientTls)});
  const Reply reply = echo(channel, msg("secret"));
  ASSERT_TRUE(reply.status.ok()) << reply.status.toString();
  EXPECT_EQ(reply.message.text(), "secret");
}

TEST_P(ClientTest, ChannelShutdownFailsCalls) {
  startServer();
  auto channel = makeChannel();
  ASSERT_TRUE(echo(channel, msg("x")).status.ok());
  auto slot = std::make_shared<Slot<Reply>>();
  TestService::Stub(channel).Sleep(msg("zz"), [slot](Status s, Msg m) {
    slot->set({std::move(s), std::move(m)});
  });
  ASSERT_TRUE(waitUntil([&] { return impl_.sleeping.load() == 1; }));
  channel->shutdown();
  EXPECT_EQ(slot->wait().value_or(Reply{}).status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(echo(channel, msg("x")).status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(channel->state(), Channel::State::kShutdown);
}

INSTANTIATE_TEST_SUITE_P(Backends, ClientTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         libnet::test::pollerName);

}  // namespace
}  // namespace libnet::grpc::test
