// HappyEyeballs (connect by name, RFC 8305) against real loopback sockets
// and a resolver of the test's own that answers each family after a delay it
// chooses: the race's order and outcome, every error reported, stop(), and
// TcpClient and coro::connect by name; on every backend.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/ConnectFailure.h"
#include "net/EventLoop.h"
#include "net/HappyEyeballs.h"
#include "net/NameResolver.h"
#include "net/Socket.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;
using Event = HappyEyeballs::Event;
using Family = NameResolver::Family;

// Answers each family with what the test set, after the delay it set, or
// never. The addresses keep their own ports (each test socket has its own
// ephemeral one), not the port asked for.
class FakeResolver : public NameResolver {
 public:
  struct Answer {
    ResolveResult result;
    Duration delay = Duration::zero();
    bool never = false;
  };
  // What every query did: counted here, shared with the queries, which may
  // outlive the resolver.
  struct Stats {
    int started = 0;
    int cancelled = 0;
    int live = 0;
    std::vector<std::string> hosts;
  };

  explicit FakeResolver(EventLoop* loop) : loop_(loop) {}

  void answer(Family family, std::vector<InetAddress> addresses, Duration delay = {}) {
    Answer& a = answers_[family];
    a.result.addresses = std::move(addresses);
    a.delay = delay;
  }
  void fail(Family family, ResolveErrc errc, const std::string& message, Duration delay = {}) {
    Answer& a = answers_[family];
    a.result.error = ResolveError{errc, message};
    a.delay = delay;
  }
  void never(Family family) { answers_[family].never = true; }
  [[nodiscard]] const Stats& stats() const { return *stats_; }

  QueryPtr lookup(std::string_view host, uint16_t, Family family, Callback cb) override {
    ++stats_->started;
    stats_->hosts.emplace_back(host);
    auto query = std::make_unique<Query>(loop_, stats_);
    const Answer& answer = answers_.at(family);
    if (!answer.never) {
      query->timer = loop_->runAfter(
          answer.delay, [cb = std::move(cb), result = answer.result, answered = query->answered] {
            *answered = true;
            cb(result);
          });
    }
    return query;
  }

 private:
  class Query : public NameResolver::Query {
   public:
    Query(EventLoop* loop, std::shared_ptr<Stats> stats) : loop_(loop), stats_(std::move(stats)) {
      ++stats_->live;
    }
    ~Query() override {
      cancel();
      --stats_->live;
    }
    // Counts only a query that had not answered yet.
    void cancel() override {
      if (*answered || cancelled_) return;
      cancelled_ = true;
      loop_->cancel(timer);
      ++stats_->cancelled;
    }
    TimerId timer;
    std::shared_ptr<bool> answered = std::make_shared<bool>(false);

   private:
    EventLoop* loop_;
    std::shared_ptr<Stats> stats_;
    bool cancelled_ = false;
  };

  EventLoop* loop_;
  std::map<Family, Answer> answers_;
  std::shared_ptr<Stats> stats_ = std::make_shared<Stats>();
};

// A loopback socket of the family, bound to an ephemeral port: listening
// (backlog >= 0) or, with backlog < 0, refusing every connect (bound, so
// that nobody else takes the port, but not listening: the kernel resets).
struct Endpoint {
  Endpoint(bool ipv6, int backlog) : socket(Socket::createNonblocking(ipv6 ? AF_INET6 : AF_INET)) {
    socket.bindAddress(InetAddress(0, true, ipv6));
    if (backlog >= 0) socket.listen(backlog);
    address = *Socket::localAddress(socket.fd()).inet();
  }
  Socket socket;
  InetAddress address;
};

// A listener whose connects never complete: backlog 0 queues one connection
// (made here and never accepted); the kernel drops the SYNs that follow.
struct Blackhole {
  explicit Blackhole(bool ipv6) : endpoint(ipv6, 0), filler(endpoint.address) {}
  Endpoint endpoint;
  test::BlockingClient filler;
};

bool haveIpv6Loopback() {
  UniqueFd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const InetAddress loopback(0, true, true);
  return fd && ::bind(fd.get(), loopback.sockAddr(), loopback.sockLen()) == 0;
}

#define SKIP_WITHOUT_IPV6()                                            \
  do {                                                                 \
    if (!haveIpv6Loopback()) GTEST_SKIP() << "no IPv6 loopback (::1)"; \
  } while (0)

struct Outcome {
  bool connected = false;
  bool failed = false;
  InetAddress peer;
  UniqueFd fd;
  ConnectFailure failure;
  std::vector<Event> events;
  Duration elapsed{};

  [[nodiscard]] std::vector<Event> of(Event::Kind kind) const {
    std::vector<Event> out;
    std::copy_if(events.begin(), events.end(), std::back_inserter(out),
                 [kind](const Event& e) { return e.kind == kind; });
    return out;
  }
};

class HappyEyeballsTest : public test::LoopTest {
 protected:
  void SetUp() override {
    test::LoopTest::SetUp();
    if (IsSkipped()) return;
    loop_ = std::make_unique<EventLoop>(GetParam());
    resolver_ = std::make_shared<FakeResolver>(loop_.get());
  }

  HappyEyeballs::Request request(std::string host, uint16_t port = 80) {
    HappyEyeballs::Request r;
    r.host = std::move(host);
    r.port = port;
    r.resolver = resolver_;
    return r;
  }

  // Runs the race to its end (or the watchdog's) on the test thread's loop.
  Outcome race(HappyEyeballs::Request request) {
    Outcome out;
    request.onEvent = [&out](const Event& e) { out.events.push_back(e); };
    auto eyeballs = HappyEyeballs::create(loop_.get(), std::move(request));
    const MonoTime start = MonoClock::now();
    eyeballs->start(
        [&](UniqueFd fd, const InetAddress& peer) {
          out.connected = true;
          out.fd = std::move(fd);
          out.peer = peer;
          loop_->quit();
        },
        [&](const ConnectFailure& failure) {
          out.failed = true;
          out.failure = failure;
          loop_->quit();
        });
    runLoop();
    out.elapsed = MonoClock::now() - start;
    return out;
  }

  // An echo server on the test's loop.
  std::unique_ptr<TcpServer> echoServer() {
    auto server = std::make_unique<TcpServer>(loop_.get(), InetAddress(0, true), "echo");
    server->setMessageCallback(
        [](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) { conn->send(buf); });
    server->start();
    return server;
  }

  // A client of `host`, which has no AAAA record (`why`) and the A record
  // `ipv4`.
  std::unique_ptr<TcpClient> clientOf(const std::string& host, const InetAddress& ipv4,
                                      ResolveErrc why = ResolveErrc::kNoData) {
    resolver_->fail(Family::kIPv6, why, host + ": " + resolveErrcName(why));
    resolver_->answer(Family::kIPv4, {ipv4});
    return std::make_unique<TcpClient>(loop_.get(), host + ":" + std::to_string(ipv4.port()),
                                       "client", TcpClient::Options{.resolver = resolver_});
  }

  // Runs the loop until a callback quits it (or the watchdog does: a failure).
  void runLoop() {
    armWatchdog(*loop_);
    loop_->loop();
    EXPECT_FALSE(timedOut_) << "the test's loop was not quit in time";
  }

  std::unique_ptr<EventLoop> loop_;
  std::shared_ptr<FakeResolver> resolver_;
};

long long millis(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

TEST_P(HappyEyeballsTest, AnIpv6AddressThatHangsLosesToAWorkingIpv4OneAfterTheAttemptDelay) {
  SKIP_WITHOUT_IPV6();
  Blackhole ipv6(true);
  Endpoint ipv4(false, SOMAXCONN);
  resolver_->answer(Family::kIPv6, {ipv6.endpoint.address});
  resolver_->answer(Family::kIPv4, {ipv4.address});
  const int fdsBefore = test::openFdCount();
  Outcome out = race(request("dual.test"));
  ASSERT_TRUE(out.connected) << out.failure.message();
  EXPECT_EQ(out.peer, ipv4.address);
  LOG_INFO << "connected over IPv4 in " << millis(out.elapsed) << " ms (attempt delay 250 ms)";
  const auto started = out.of(Event::Kind::kAttemptStarted);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[0].address, ipv6.endpoint.address);
  EXPECT_EQ(started[1].address, ipv4.address);
  // Not because the IPv6 one failed: it was still pending when the delay
  // passed, and it never failed.
  EXPECT_EQ(started[1].trigger, Event::Trigger::kAttemptDelay);
  EXPECT_TRUE(out.of(Event::Kind::kAttemptFailed).empty());
  ASSERT_EQ(out.of(Event::Kind::kConnected).size(), 1u);
  // The winner's socket is the only one left; the IPv6 attempt's is closed.
  EXPECT_EQ(test::openFdCount(), fdsBefore + 1);
  out.fd.reset();
  EXPECT_EQ(test::openFdCount(), fdsBefore);
}

TEST_P(HappyEyeballsTest, AnAaaaAnswerWithinTheResolutionDelayIsTriedFirst) {
  SKIP_WITHOUT_IPV6();
  Endpoint ipv6(true, SOMAXCONN);
  Endpoint ipv4(false, SOMAXCONN);
  resolver_->answer(Family::kIPv4, {ipv4.address});
  resolver_->answer(Family::kIPv6, {ipv6.address}, 30ms);
  HappyEyeballs::Request r = request("dual.test");
  // Long enough that only the AAAA answer can end the wait, and that no
  // second attempt joins the first.
  r.resolutionDelay = 20s;
  r.attemptDelay = 20s;
  Outcome out = race(std::move(r));
  ASSERT_TRUE(out.connected) << out.failure.message();
  EXPECT_EQ(out.peer, ipv6.address);
  const auto resolved = out.of(Event::Kind::kResolved);
  ASSERT_EQ(resolved.size(), 2u);
  EXPECT_EQ(resolved[0].family, Family::kIPv4);
  EXPECT_EQ(resolved[1].family, Family::kIPv6);
  const auto started = out.of(Event::Kind::kAttemptStarted);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].address, ipv6.address);
  EXPECT_EQ(started[0].trigger, Event::Trigger::kAnswer);
}

TEST_P(HappyEyeballsTest, AnAAnswerStopsWaitingForAaaaAfterTheResolutionDelay) {
  Endpoint ipv4(false, SOMAXCONN);
  resolver_->answer(Family::kIPv4, {ipv4.address});
  resolver_->never(Family::kIPv6);
  Outcome out = race(request("slow-aaaa.test"));
  ASSERT_TRUE(out.connected) << out.failure.message();
  EXPECT_EQ(out.peer, ipv4.address);
  const auto started = out.of(Event::Kind::kAttemptStarted);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].trigger, Event::Trigger::kResolutionDelay);
  // The AAAA lookup still out was cancelled with the race's end.
  EXPECT_EQ(resolver_->stats().started, 2);
  EXPECT_EQ(resolver_->stats().cancelled, 1);
  EXPECT_EQ(resolver_->stats().hosts,
            (std::vector<std::string>{"slow-aaaa.test", "slow-aaaa.test"}));
}

TEST_P(HappyEyeballsTest, AllRefusedReportsEveryAttemptInterleavedByFamily) {
  SKIP_WITHOUT_IPV6();
  Endpoint v6a(true, -1), v6b(true, -1), v4a(false, -1), v4b(false, -1);
  // Both answers are in before the first attempt: A waits for AAAA.
  resolver_->answer(Family::kIPv6, {v6a.address, v6b.address}, 10ms);
  resolver_->answer(Family::kIPv4, {v4a.address, v4b.address});
  HappyEyeballs::Request r = request("refused.test", 8080);
  r.resolutionDelay = 20s;
  const int fdsBefore = test::openFdCount();
  Outcome out = race(std::move(r));
  ASSERT_TRUE(out.failed);
  const auto started = out.of(Event::Kind::kAttemptStarted);
  ASSERT_EQ(started.size(), 4u);
  EXPECT_EQ(started[0].address, v6a.address);
  EXPECT_EQ(started[1].address, v4a.address);
  EXPECT_EQ(started[2].address, v6b.address);
  EXPECT_EQ(started[3].address, v4b.address);
  const ConnectFailure& f = out.failure;
  ASSERT_EQ(f.attempts.size(), 4u);
  std::set<std::string> failed;
  for (const AttemptError& a : f.attempts) {
    EXPECT_EQ(a.error, ECONNREFUSED) << a.address.toIpPort();
    failed.insert(a.address.toIpPort());
  }
  EXPECT_EQ(failed.size(), 4u);
  EXPECT_FALSE(f.ipv6);
  EXPECT_FALSE(f.ipv4);
  EXPECT_EQ(f.error(), ECONNREFUSED);
  EXPECT_FALSE(f.permanent());
  const std::string message = f.message();
  EXPECT_EQ(message.rfind("refused.test:8080: ", 0), 0u) << message;
  for (const Endpoint* e : {&v6a, &v6b, &v4a, &v4b}) {
    EXPECT_NE(message.find(e->address.toIpPort() + ": " + strerrorTl(ECONNREFUSED)),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(test::openFdCount(), fdsBefore);
}

TEST_P(HappyEyeballsTest, LookupErrorsOfBothFamiliesAreReported) {
  resolver_->fail(Family::kIPv6, ResolveErrc::kNotFound, "no.such.test: NXDOMAIN");
  resolver_->fail(Family::kIPv4, ResolveErrc::kServerFailure, "no.such.test: SERVFAIL", 10ms);
  Outcome out = race(request("no.such.test"));
  ASSERT_TRUE(out.failed);
  const ConnectFailure& f = out.failure;
  EXPECT_EQ(f.ipv6.errc, ResolveErrc::kNotFound);
  EXPECT_EQ(f.ipv4.errc, ResolveErrc::kServerFailure);
  EXPECT_TRUE(f.attempts.empty());
  EXPECT_EQ(f.error(), EHOSTUNREACH);
  EXPECT_EQ(f.message(),
            "no.such.test:80: IPv6 lookup: no.such.test: NXDOMAIN; "
            "IPv4 lookup: no.such.test: SERVFAIL");
}

TEST_P(HappyEyeballsTest, ALookupErrorAndAnAttemptErrorAreBothReported) {
  Endpoint refusing(false, -1);
  resolver_->fail(Family::kIPv6, ResolveErrc::kTimedOut, "half.test: timeout");
  resolver_->answer(Family::kIPv4, {refusing.address});
  Outcome out = race(request("half.test"));
  ASSERT_TRUE(out.failed);
  const ConnectFailure& f = out.failure;
  EXPECT_EQ(f.ipv6.errc, ResolveErrc::kTimedOut);
  ASSERT_EQ(f.attempts.size(), 1u);
  EXPECT_EQ(f.attempts[0].address, refusing.address);
  // The attempt got further than the lookup: its errno is the one to tell.
  EXPECT_EQ(f.error(), ECONNREFUSED);
  EXPECT_NE(f.message().find("half.test: timeout"), std::string::npos) << f.message();
  EXPECT_NE(f.message().find(refusing.address.toIpPort()), std::string::npos) << f.message();
}

TEST_P(HappyEyeballsTest, StopInTheMiddleFreesEverythingAtOnceAndCallsNothing) {
  Blackhole hanging(false);
  resolver_->answer(Family::kIPv4, {hanging.endpoint.address});
  resolver_->never(Family::kIPv6);
  const int fdsBefore = test::openFdCount();
  HappyEyeballs::Request r = request("hang.test");
  r.attemptDelay = 20ms;
  bool called = false;
  int fdsWhileConnecting = -1;
  int fdsAfterStop = -1;
  std::shared_ptr<HappyEyeballs> eyeballs;
  r.onEvent = [&](const Event& e) {
    if (e.kind != Event::Kind::kAttemptStarted) return;
    loop_->queueInLoop([&] {
      fdsWhileConnecting = test::openFdCount();
      eyeballs->stop();
      fdsAfterStop = test::openFdCount();
      // Long enough for the attempt delay and another lookup answer to have
      // come, had they not been cancelled: nothing may call back.
      loop_->runAfter(200ms, [&] { loop_->quit(); });
    });
  };
  eyeballs = HappyEyeballs::create(loop_.get(), std::move(r));
  eyeballs->start([&](UniqueFd, const InetAddress&) { called = true; },
                  [&](const ConnectFailure&) { called = true; });
  runLoop();
  EXPECT_FALSE(called);
  EXPECT_EQ(fdsWhileConnecting, fdsBefore + 1);
  EXPECT_EQ(fdsAfterStop, fdsBefore);
  EXPECT_EQ(eyeballs->attempts(), 1);
  EXPECT_EQ(resolver_->stats().cancelled, 1);
  EXPECT_EQ(resolver_->stats().live, 0);
}

TEST_P(HappyEyeballsTest, ANumericHostNeedsNoResolverAndNoLookup) {
  Endpoint ipv4(false, SOMAXCONN);
  HappyEyeballs::Request r = request("127.0.0.1", ipv4.address.port());
  r.resolver = nullptr;
  Outcome out = race(std::move(r));
  ASSERT_TRUE(out.connected) << out.failure.message();
  EXPECT_EQ(out.peer, ipv4.address);
  EXPECT_TRUE(out.of(Event::Kind::kResolved).empty());
  EXPECT_EQ(resolver_->stats().started, 0);
  if (haveIpv6Loopback()) {
    Endpoint ipv6(true, SOMAXCONN);
    HappyEyeballs::Request r6 =
        HappyEyeballs::Request::parse("[::1]:" + std::to_string(ipv6.address.port()), nullptr);
    Outcome out6 = race(std::move(r6));
    ASSERT_TRUE(out6.connected) << out6.failure.message();
    EXPECT_EQ(out6.peer, ipv6.address);
  }
}

TEST_P(HappyEyeballsTest, AHostNameWithoutAResolverOrMalformedTextIsRefusedUpFront) {
  try {
    HappyEyeballs::check(HappyEyeballs::Request::parse("db.example.test:5432", nullptr));
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("db.example.test"), std::string::npos) << e.what();
  }
  try {
    TcpClient client(loop_.get(), "db.example.test:5432", "client", TcpClient::Options{});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("db.example.test"), std::string::npos) << e.what();
  }
  TcpClient::Options options{.resolver = resolver_};
  for (const char* bad : {"no-port", "host:", "host:99999", "::1:80", ":80", "[not-v6]:80"}) {
    EXPECT_THROW(TcpClient(loop_.get(), bad, "client", options), std::invalid_argument) << bad;
  }
  options.attemptDelay = Duration::zero();
  EXPECT_THROW(TcpClient(loop_.get(), "host.test:80", "client", options), std::invalid_argument);
}

TEST_P(HappyEyeballsTest, ATcpClientByNameEchoes) {
  auto server = echoServer();
  auto client = clientOf("echo.test", *server->listenAddress().inet());
  const std::string message = "hello by name";
  std::string echoed;
  InetAddress peer;
  client->setConnectionCallback([&](const TcpConnectionPtr& conn) {
    if (!conn->connected()) return;
    peer = *conn->peerAddress().inet();
    conn->send(message);
  });
  client->setMessageCallback([&](const TcpConnectionPtr&, Buffer* buf, Timestamp) {
    echoed += buf->retrieveAllAsString();
    if (echoed.size() >= message.size()) loop_->quit();
  });
  client->connect();
  runLoop();
  EXPECT_EQ(echoed, message);
  EXPECT_EQ(peer, *server->listenAddress().inet());
  EXPECT_EQ(client->connectAttempts(), 1);
  EXPECT_EQ(resolver_->stats().hosts, (std::vector<std::string>{"echo.test", "echo.test"}));
}

TEST_P(HappyEyeballsTest, ATcpClientByNameReportsTheWholeFailureThenTheErrno) {
  Endpoint refusing(false, -1);
  auto client = clientOf("refused.test", refusing.address);
  std::vector<std::string> calls;
  std::optional<ConnectFailure> failure;
  client->setConnectFailureCallback([&](const ConnectFailure& f) {
    calls.push_back("failure");
    failure = f;
  });
  client->setConnectErrorCallback([&](int err) {
    calls.push_back(std::string("errno ") + strerrorTl(err));
    client->stop();
    loop_->quit();
  });
  client->connect();
  runLoop();
  EXPECT_EQ(calls, (std::vector<std::string>{"failure",
                                             std::string("errno ") + strerrorTl(ECONNREFUSED)}));
  ASSERT_TRUE(failure.has_value());
  ASSERT_EQ(failure->attempts.size(), 1u);
  EXPECT_EQ(failure->attempts[0].address, refusing.address);
  EXPECT_EQ(failure->ipv6.errc, ResolveErrc::kNoData);
  EXPECT_EQ(client->connectAttempts(), 1);
}

TEST_P(HappyEyeballsTest, ATcpClientByNameLooksTheNameUpAgainForEveryRound) {
  Endpoint refusing(false, -1);
  auto server = echoServer();
  resolver_->fail(Family::kIPv6, ResolveErrc::kNoData, "moving.test: no AAAA");
  resolver_->answer(Family::kIPv4, {refusing.address});
  TcpClient client(loop_.get(), "moving.test:80", "client",
                   TcpClient::Options{.initialRetryDelay = 10ms, .resolver = resolver_});
  // The name moves to the server once the first round has failed.
  client.setConnectFailureCallback([&](const ConnectFailure& f) {
    EXPECT_EQ(f.attempts.at(0).address, refusing.address);
    resolver_->answer(Family::kIPv4, {*server->listenAddress().inet()});
  });
  InetAddress peer;
  client.setConnectionCallback([&](const TcpConnectionPtr& conn) {
    if (!conn->connected()) return;
    peer = *conn->peerAddress().inet();
    loop_->quit();
  });
  client.connect();
  runLoop();
  EXPECT_EQ(peer, *server->listenAddress().inet());
  EXPECT_EQ(client.connectAttempts(), 2);
  EXPECT_EQ(resolver_->stats().started, 4);
}

struct CoroOutcome {
  coro::Errc error = coro::Errc::kCancelled;
  int sysError = -1;
  std::string detail;
  std::string reply;
};

coro::Task<> connectByName(EventLoop* loop, TcpClient* client, CoroOutcome* out) {
  coro::ConnectResult r = co_await coro::connect(*client, 5s);
  out->error = r.error;
  out->sysError = r.sysError;
  out->detail = r.detail;
  if (r) {
    co_await r.stream.write("ping");
    if (coro::Input in = co_await r.stream.readAtLeast(4)) out->reply = std::string(in.view());
  }
  loop->quit();
}

TEST_P(HappyEyeballsTest, CoroutineConnectByNameSucceeds) {
  auto server = echoServer();
  auto client = clientOf("coro.test", *server->listenAddress().inet());
  CoroOutcome out;
  coro::spawn(loop_.get(), connectByName(loop_.get(), client.get(), &out));
  runLoop();
  EXPECT_EQ(out.error, coro::Errc::kOk);
  EXPECT_EQ(out.reply, "ping");
}

TEST_P(HappyEyeballsTest, CoroutineConnectByNameFailsWithEveryError) {
  Endpoint refusing(false, -1);
  auto client = clientOf("coro.test", refusing.address, ResolveErrc::kServerFailure);
  CoroOutcome out;
  coro::spawn(loop_.get(), connectByName(loop_.get(), client.get(), &out));
  runLoop();
  EXPECT_EQ(out.error, coro::Errc::kConnectFailed);
  EXPECT_EQ(out.sysError, ECONNREFUSED);
  EXPECT_NE(out.detail.find("coro.test: SERVFAIL"), std::string::npos) << out.detail;
  EXPECT_NE(out.detail.find(refusing.address.toIpPort()), std::string::npos) << out.detail;
}

TEST(ConnectFailureTest, TheErrnoThatSaysMostIsChosen) {
  const InetAddress v6("::1", 80);
  const InetAddress v4("127.0.0.1", 80);
  ConnectFailure f{.host = "h.test", .port = 80};
  EXPECT_EQ(f.error(), EHOSTUNREACH);  // nothing to try
  f.ipv4 = {ResolveErrc::kTimedOut, "h.test: timeout"};
  EXPECT_EQ(f.error(), ETIMEDOUT);
  // No IPv6 route says less than a refusal, wherever it stands.
  f.attempts = {{v6, ENETUNREACH}, {v4, ECONNREFUSED}, {v6, EHOSTUNREACH}};
  EXPECT_EQ(f.error(), ECONNREFUSED);
  f.attempts = {{v4, ECONNREFUSED}, {v4, ETIMEDOUT}};
  EXPECT_EQ(f.error(), ETIMEDOUT);  // else the last one
  f.attempts = {{v6, ENETUNREACH}, {v6, EADDRNOTAVAIL}};
  EXPECT_EQ(f.error(), EADDRNOTAVAIL);
  EXPECT_FALSE(f.permanent());
  f.attempts = {{v6, EACCES, true}, {v4, EACCES, true}};
  EXPECT_TRUE(f.permanent());
  const ConnectFailure literal{.host = "::1", .port = 80};
  EXPECT_EQ(literal.message(), "[::1]:80: no address");
}

TEST(ConnectFailureTest, ALayersFailureIsEprotoWithItsReason) {
  ConnectFailure f{.host = "::1", .port = 443, .layer = "certificate verify failed: x"};
  EXPECT_EQ(f.error(), EPROTO);
  EXPECT_FALSE(f.permanent());
  EXPECT_EQ(f.message(), "[::1]:443: certificate verify failed: x");
  f.host = "unix:/run/s";  // a Unix socket: no port to name
  f.port = 0;
  EXPECT_EQ(f.message(), "unix:/run/s: certificate verify failed: x");
}

INSTANTIATE_TEST_SUITE_P(Backends, HappyEyeballsTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
