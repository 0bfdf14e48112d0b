// dns::Resolver against real servers on loopback, on both backends: dnsmasq
// with fixed records, and scripted servers that fail in each way a server
// can (SERVFAIL, a truncated answer, silence, garbage, slowness), a port
// where nothing listens, cancellation, destruction with queries in flight,
// and the coroutine awaitable.
#include "net/dns/Resolver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/coro/Coro.h"
#include "net/dns/CoroResolve.h"
#include "tests/net/TestUtil.h"
#include "tests/net/dns/DnsServerProcess.h"

namespace libnet::test {
namespace {

using namespace std::chrono_literals;
using dns::Resolver;
using Family = NameResolver::Family;

// Runs `loop` until `done` holds (checked every millisecond) or `limit`
// passes; returns whether it holds.
bool runUntil(EventLoop& loop, const std::function<bool()>& done, Duration limit = kWait) {
  if (done()) return true;
  const MonoTime deadline = MonoClock::now() + limit;
  const TimerId check = loop.runEvery(1ms, [&] {
    if (done() || MonoClock::now() > deadline) loop.quit();
  });
  loop.loop();
  loop.cancel(check);
  return done();
}

// One turn of the loop: what is queued now runs.
void runQueued(EventLoop& loop) {
  loop.queueInLoop([&loop] { loop.quit(); });
  loop.loop();
}

std::vector<std::string> ips(const ResolveResult& result) {
  std::vector<std::string> out;
  for (const InetAddress& a : result.addresses) out.push_back(a.toIp());
  std::sort(out.begin(), out.end());
  return out;
}

Resolver::Options optionsFor(const InetAddress& server, Duration timeout = 2s, int tries = 2) {
  Resolver::Options options;
  options.servers = {server};
  options.timeout = timeout;
  options.tries = tries;
  options.useHostsFile = false;
  options.searchDomains = std::vector<std::string>{};
  return options;
}

// Looks `host` up and runs the loop until the callback comes (bounded).
ResolveResult resolveNow(EventLoop& loop, NameResolver& resolver, const std::string& host,
                         Family family = Family::kAny, uint16_t port = 80, Duration limit = kWait) {
  std::optional<ResolveResult> got;
  const NameResolver::QueryPtr query =
      resolver.lookup(host, port, family, [&](ResolveResult r) { got = std::move(r); });
  EXPECT_FALSE(got) << "called back inside lookup()";
  if (!runUntil(
          loop, [&] { return got.has_value(); }, limit)) {
    ADD_FAILURE() << "no answer for " << host;
    return {};
  }
  return *got;
}

class ResolverTest : public DnsmasqSuite {
 protected:
  // A port of 127.0.0.1 where no name server listens.
  static InetAddress nobody() { return InetAddress("127.0.0.1", *DnsServerProcess::freeUdpPort()); }
};

TEST_P(ResolverTest, NumericAddressesNeedNoServer) {
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(nobody()));
  ResolveResult v4 = resolveNow(loop, resolver, "127.0.0.1", Family::kAny, 8080);
  ASSERT_TRUE(v4.ok()) << v4.error.message;
  ASSERT_EQ(v4.addresses.size(), 1u);
  EXPECT_EQ(v4.addresses[0].toIpPort(), "127.0.0.1:8080");
  ResolveResult v6 = resolveNow(loop, resolver, "::1", Family::kIPv6, 8080);
  ASSERT_TRUE(v6.ok()) << v6.error.message;
  EXPECT_EQ(ips(v6), std::vector<std::string>{"::1"});
  EXPECT_EQ(v6.addresses[0].port(), 8080);
  ResolveResult wrongFamily = resolveNow(loop, resolver, "::1", Family::kIPv4);
  EXPECT_EQ(wrongFamily.error.errc, ResolveErrc::kNoData);
  EXPECT_EQ(resolver.queriesInFlight(), 0u);
  EXPECT_EQ(resolver.openSockets(), 0u);
}

TEST_P(ResolverTest, DnsmasqRecordsOfEachFamily) {
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(dnsmasq()));
  ResolveResult both = resolveNow(loop, resolver, "both.dns.test", Family::kAny, 443);
  ASSERT_TRUE(both.ok()) << both.error.message;
  EXPECT_EQ(ips(both), (std::vector<std::string>{"10.0.0.1", "fd00::1"}));
  for (const InetAddress& a : both.addresses) EXPECT_EQ(a.port(), 443);
  EXPECT_EQ(ips(resolveNow(loop, resolver, "both.dns.test", Family::kIPv4)),
            std::vector<std::string>{"10.0.0.1"});
  EXPECT_EQ(ips(resolveNow(loop, resolver, "both.dns.test", Family::kIPv6)),
            std::vector<std::string>{"fd00::1"});
  // Once nothing is in flight c-ares closes its sockets.
  EXPECT_TRUE(runUntil(loop, [&] { return resolver.openSockets() == 0; }));
}

TEST_P(ResolverTest, NxdomainNoDataAndRefusedAreDistinct) {
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(dnsmasq()));
  ResolveResult nx = resolveNow(loop, resolver, "no.such.test");
  EXPECT_EQ(nx.error.errc, ResolveErrc::kNotFound);
  EXPECT_EQ(nx.error.message, "no.such.test: NXDOMAIN");
  EXPECT_TRUE(nx.addresses.empty());
  ResolveResult noData = resolveNow(loop, resolver, "v4only.dns.test", Family::kIPv6);
  EXPECT_EQ(noData.error.errc, ResolveErrc::kNoData) << noData.error.message;
  // dnsmasq has no upstream: a name outside its domains is refused.
  ResolveResult refused = resolveNow(loop, resolver, "example.com", Family::kIPv4);
  EXPECT_EQ(refused.error.errc, ResolveErrc::kRefused) << refused.error.message;
  EXPECT_EQ(refused.error.message, "example.com: REFUSED");
}

TEST_P(ResolverTest, ThousandConcurrentLookupsAllAnswered) {
  const int baseline = openFdCount();
  {
    EventLoop loop(GetParam());
    // 2000 answers arrive before the loop reads the first: what does not fit
    // in the socket's buffer is lost and asked again after 500 ms.
    Resolver::Options options = optionsFor(dnsmasq(), 500ms, 5);
    options.receiveBufferBytes = 4 << 20;
    Resolver resolver(&loop, options);
    constexpr int kLookups = 1000;
    int answered = 0, failed = 0;
    size_t maxSockets = 0;
    std::vector<NameResolver::QueryPtr> queries;
    for (int i = 0; i < kLookups; ++i) {
      queries.push_back(resolver.lookup(
          "host" + std::to_string(i) + ".bench.test", 80, Family::kAny, [&](ResolveResult r) {
            ++answered;
            if (ips(r) != std::vector<std::string>{"10.9.9.9", "fd00::9"}) {
              if (++failed == 1) ADD_FAILURE() << r.error.message;
            }
          }));
      maxSockets = std::max(maxSockets, resolver.openSockets());
    }
    EXPECT_EQ(resolver.queriesInFlight(), static_cast<size_t>(kLookups));
    EXPECT_TRUE(runUntil(
        loop, [&] { return answered == kLookups; }, 30s))
        << answered;
    EXPECT_EQ(failed, 0);
    EXPECT_EQ(maxSockets, 1u);  // one UDP socket per server
    EXPECT_EQ(resolver.queriesInFlight(), 0u);
  }
  EXPECT_EQ(openFdCount(), baseline);
}

TEST_P(ResolverTest, ServfailIsReportedAsServfail) {
  DnsServerProcess server;
  ASSERT_TRUE(server.startScripted("servfail")) << server.why();
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(server.address(), 5s));
  const MonoTime start = MonoClock::now();
  ResolveResult r = resolveNow(loop, resolver, "servfail.test");
  EXPECT_EQ(r.error.errc, ResolveErrc::kServerFailure) << r.error.message;
  EXPECT_EQ(r.error.message, "servfail.test: SERVFAIL");
  EXPECT_LT(MonoClock::now() - start, 2s);  // the answer, not a timeout
  // c-ares's own way (nextServerOnFailure): the answer is skipped, every try
  // gets one, and what is left is "no server reachable".
  Resolver::Options retrying = optionsFor(server.address(), 5s);
  retrying.nextServerOnFailure = true;
  Resolver c(&loop, retrying);
  EXPECT_EQ(resolveNow(loop, c, "servfail.test").error.errc, ResolveErrc::kNoServer);
}

TEST_P(ResolverTest, TruncatedAnswerIsFetchedOverTcp) {
  DnsServerProcess server;
  ASSERT_TRUE(server.startScripted("truncated")) << server.why();
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(server.address(), 5s));
  // Each TCP answer arrives in one segment, which c-ares reads in two
  // pieces: answered only if the edge-triggered socket is drained.
  ResolveResult r = resolveNow(loop, resolver, "truncated.test", Family::kAny, 80, 4s);
  ASSERT_TRUE(r.ok()) << r.error.message;
  EXPECT_EQ(ips(r), (std::vector<std::string>{"10.1.2.3", "fd00::3"}));
  EXPECT_TRUE(runUntil(loop, [&] { return resolver.openSockets() == 0; }));
}

TEST_P(ResolverTest, SilentServerTimesOutAfterEveryTry) {
  DnsServerProcess server;
  ASSERT_TRUE(server.startScripted("silent")) << server.why();
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(server.address(), 100ms, 2));
  const MonoTime start = MonoClock::now();
  ResolveResult r = resolveNow(loop, resolver, "silent.test", Family::kIPv4);
  const Duration took = MonoClock::now() - start;
  EXPECT_EQ(r.error.errc, ResolveErrc::kTimedOut) << r.error.message;
  EXPECT_EQ(r.error.message, "silent.test: timeout");
  // 100 ms, then 200 ms for the second try (c-ares doubles it).
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 5s);
}

TEST_P(ResolverTest, GarbageAnswerIsBadResponse) {
  DnsServerProcess server;
  ASSERT_TRUE(server.startScripted("garbage")) << server.why();
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(server.address(), 5s));
  ResolveResult r = resolveNow(loop, resolver, "garbage.test", Family::kIPv4);
  EXPECT_EQ(r.error.errc, ResolveErrc::kBadResponse) << r.error.message;
}

// A server whose TCP answer is malformed (the UDP answer was truncated, so
// the query came again over TCP): a bad response, in each of the ways a
// stream can be wrong, whether the server then closes or keeps the
// connection open; not "no name server reachable", and not a wait for the
// timeout.
TEST_P(ResolverTest, MalformedTcpAnswerIsBadResponse) {
  for (const char* mode : {"tcp-empty", "tcp-short", "tcp-garbage", "tcp-cut"}) {
    SCOPED_TRACE(mode);
    DnsServerProcess server;
    ASSERT_TRUE(server.startScripted(mode)) << server.why();
    EventLoop loop(GetParam());
    Resolver resolver(&loop, optionsFor(server.address(), 3s, 2));
    for (const Family family : {Family::kIPv4, Family::kAny}) {
      ResolveResult r = resolveNow(loop, resolver, "malformed.test", family, 80, 20s);
      EXPECT_EQ(r.error.errc, ResolveErrc::kBadResponse) << r.error.message;
      EXPECT_EQ(r.error.message, "malformed.test: bad response");
    }
    EXPECT_EQ(resolver.queriesInFlight(), 0u);
  }
}

TEST_P(ResolverTest, NoiseIsIgnoredUntilTheTimeout) {
  DnsServerProcess server;
  ASSERT_TRUE(server.startScripted("noise")) << server.why();
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(server.address(), 100ms, 2));
  ResolveResult r = resolveNow(loop, resolver, "noise.test", Family::kIPv4);
  EXPECT_EQ(r.error.errc, ResolveErrc::kTimedOut) << r.error.message;
}

TEST_P(ResolverTest, NoServerListeningIsReportedAtOnce) {
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(nobody(), 5s, 3));
  const MonoTime start = MonoClock::now();
  ResolveResult r = resolveNow(loop, resolver, "nobody.test");
  EXPECT_EQ(r.error.errc, ResolveErrc::kNoServer) << r.error.message;
  EXPECT_EQ(r.error.message, "nobody.test: no name server reachable");
  EXPECT_LT(MonoClock::now() - start, 2s);  // ICMP port unreachable, not the 5 s timeout
}

TEST_P(ResolverTest, CancelFreesAtOnceAndTheSlowAnswerIsDropped) {
  DnsServerProcess server;
  ASSERT_TRUE(server.startScripted("slow", 300)) << server.why();
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(server.address(), 5s));
  const int baseline = openFdCount();
  auto token = std::make_shared<int>(0);
  bool called = false;
  NameResolver::QueryPtr cancelled = resolver.lookup(
      "slow.test", 80, Family::kAny, [&called, token](ResolveResult) { called = true; });
  NameResolver::QueryPtr destroyed = resolver.lookup(
      "slow.test", 80, Family::kIPv4, [&called, token](ResolveResult) { called = true; });
  EXPECT_EQ(token.use_count(), 3);
  cancelled->cancel();
  destroyed.reset();
  EXPECT_EQ(token.use_count(), 1);            // both callbacks freed at once
  EXPECT_EQ(resolver.queriesInFlight(), 2u);  // detached: c-ares still waits
  // The slow answers come and are dropped; the sockets close after them.
  EXPECT_TRUE(runUntil(loop, [&] { return resolver.queriesInFlight() == 0; }));
  EXPECT_TRUE(runUntil(loop, [&] { return resolver.openSockets() == 0; }));
  runQueued(loop);
  EXPECT_FALSE(called);
  cancelled->cancel();  // again: harmless
  EXPECT_EQ(openFdCount(), baseline);
}

TEST_P(ResolverTest, DestroyedWithQueriesInFlight) {
  DnsServerProcess server;
  ASSERT_TRUE(server.startScripted("silent")) << server.why();
  const int baseline = openFdCount();
  EventLoop loop(GetParam());
  const int withLoop = openFdCount();
  int called = 0;
  std::vector<NameResolver::QueryPtr> queries;
  {
    Resolver resolver(&loop, optionsFor(server.address(), 5s));
    for (int i = 0; i < 100; ++i) {
      queries.push_back(resolver.lookup("silent" + std::to_string(i) + ".test", 80, Family::kAny,
                                        [&called](ResolveResult) { ++called; }));
    }
    queries.push_back(
        resolver.lookup("127.0.0.1", 80, Family::kAny, [&called](ResolveResult) { ++called; }));
    runQueued(loop);  // the numeric one is delivered, the rest wait
    EXPECT_EQ(called, 1);
    EXPECT_EQ(resolver.openSockets(), 1u);
    EXPECT_GT(openFdCount(), withLoop);
  }
  EXPECT_EQ(openFdCount(), withLoop);
  for (const auto& q : queries) q->cancel();  // inert
  queries.clear();
  runQueued(loop);
  EXPECT_EQ(called, 1);
  EXPECT_GT(withLoop, baseline);
}

TEST_P(ResolverTest, CallbackMayLookUpAgain) {
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(dnsmasq()));
  std::vector<std::string> seen;
  NameResolver::QueryPtr chained;
  auto first = resolver.lookup("127.0.0.1", 1, Family::kAny, [&](ResolveResult r) {
    seen.push_back(r.addresses.at(0).toIpPort());
    chained = resolver.lookup("both.dns.test", 2, Family::kIPv4, [&](ResolveResult again) {
      seen.push_back(again.addresses.at(0).toIpPort());
    });
  });
  ASSERT_TRUE(runUntil(loop, [&] { return seen.size() == 2; }));
  EXPECT_EQ(seen, (std::vector<std::string>{"127.0.0.1:1", "10.0.0.1:2"}));
}

TEST_P(ResolverTest, CallbackMayDestroyTheResolver) {
  EventLoop loop(GetParam());
  auto resolver = std::make_unique<Resolver>(&loop, optionsFor(dnsmasq()));
  int calls = 0;
  // Both results are delivered in one batch; the first callback destroys
  // the resolver, so the second must not run.
  auto first = resolver->lookup("127.0.0.1", 1, Family::kAny, [&](ResolveResult) {
    ++calls;
    resolver.reset();
  });
  auto second = resolver->lookup("::1", 2, Family::kAny, [&](ResolveResult) { ++calls; });
  runQueued(loop);
  runQueued(loop);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(resolver, nullptr);
  second->cancel();  // inert
}

TEST_P(ResolverTest, HostsFileAnswersLocalhostWithoutAServer) {
  EventLoop loop(GetParam());
  Resolver::Options options = optionsFor(nobody(), 5s);
  options.useHostsFile = true;
  Resolver resolver(&loop, options);
  ResolveResult r = resolveNow(loop, resolver, "localhost", Family::kIPv4);
  ASSERT_TRUE(r.ok()) << r.error.message;
  EXPECT_EQ(ips(r), std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(resolver.queriesInFlight(), 0u);
}

// RFC 6761: localhost names are the loopback addresses, without a server or
// the hosts file, in every family.
TEST_P(ResolverTest, LocalhostNamesAreLoopbackWithoutAQuery) {
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(nobody()));  // no hosts file, no server
  EXPECT_EQ(ips(resolveNow(loop, resolver, "localhost", Family::kIPv6)),
            std::vector<std::string>{"::1"});
  EXPECT_EQ(ips(resolveNow(loop, resolver, "LocalHost.", Family::kIPv4)),
            std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(ips(resolveNow(loop, resolver, "db.localhost", Family::kAny)),
            (std::vector<std::string>{"127.0.0.1", "::1"}));
  // Only under "localhost": a name that merely ends with it is asked for.
  EXPECT_EQ(resolveNow(loop, resolver, "notlocalhost", Family::kIPv4).error.errc,
            ResolveErrc::kNoServer);
  EXPECT_EQ(resolver.queriesInFlight(), 0u);
}

TEST_P(ResolverTest, BadNames) {
  EventLoop loop(GetParam());
  Resolver resolver(&loop, optionsFor(dnsmasq()));
  EXPECT_EQ(resolveNow(loop, resolver, "").error.errc, ResolveErrc::kBadName);
  EXPECT_EQ(resolveNow(loop, resolver, std::string(300, 'a')).error.errc, ResolveErrc::kBadName);
  // A label of more than 63 octets: c-ares refuses to make the query.
  ResolveResult longLabel = resolveNow(loop, resolver, std::string(64, 'a') + ".test");
  EXPECT_EQ(longLabel.error.errc, ResolveErrc::kBadName) << longLabel.error.message;
}

TEST_P(ResolverTest, CacheKeepsAnswersForTheirTtl) {
  EventLoop loop(GetParam());
  Resolver::Options options = optionsFor(dnsmasq());
  options.cacheEntries = 2;
  options.cacheMaxTtl = 300ms;  // below dnsmasq's 60 s
  Resolver resolver(&loop, options);
  ResolveResult first = resolveNow(loop, resolver, "both.dns.test", Family::kAny, 80);
  ASSERT_TRUE(first.ok()) << first.error.message;
  const MonoTime answered = MonoClock::now();
  // Again, another case and port: from the cache, no query sent.
  std::optional<ResolveResult> again;
  auto q = resolver.lookup("BOTH.dns.test", 8080, Family::kAny,
                           [&](ResolveResult r) { again = std::move(r); });
  EXPECT_EQ(resolver.queriesInFlight(), 0u);
  ASSERT_TRUE(runUntil(loop, [&] { return again.has_value(); }));
  EXPECT_EQ(ips(*again), ips(first));
  for (const InetAddress& a : again->addresses) EXPECT_EQ(a.port(), 8080);
  EXPECT_EQ(resolver.cacheHits(), 1u);
  // Another family is another entry; negative answers are not kept.
  EXPECT_TRUE(resolveNow(loop, resolver, "both.dns.test", Family::kIPv4).ok());
  EXPECT_FALSE(resolveNow(loop, resolver, "no.such.test").ok());
  EXPECT_FALSE(resolveNow(loop, resolver, "no.such.test").ok());
  EXPECT_EQ(resolver.cacheHits(), 1u);
  // A third name evicts the least recently used (both.dns.test, kAny).
  EXPECT_TRUE(resolveNow(loop, resolver, "v4only.dns.test", Family::kIPv4).ok());
  EXPECT_TRUE(resolveNow(loop, resolver, "both.dns.test", Family::kIPv4).ok());
  EXPECT_EQ(resolver.cacheHits(), 2u);
  EXPECT_TRUE(resolveNow(loop, resolver, "both.dns.test", Family::kAny).ok());
  EXPECT_EQ(resolver.cacheHits(), 2u);
  // Past the TTL the server is asked again.
  ASSERT_TRUE(runUntil(loop, [&] { return MonoClock::now() > answered + 350ms; }));
  EXPECT_TRUE(resolveNow(loop, resolver, "v4only.dns.test", Family::kIPv4).ok());
  EXPECT_EQ(resolver.cacheHits(), 2u);
}

TEST_P(ResolverTest, CoroutineLookupsAndTheirScopes) {
  DnsServerProcess silent;
  ASSERT_TRUE(silent.startScripted("silent")) << silent.why();
  EventLoop loop(GetParam());
  armWatchdog(loop);
  Resolver resolver(&loop, optionsFor(dnsmasq()));
  Resolver silentResolver(&loop, optionsFor(silent.address(), 5s));
  std::stop_source stop;
  std::vector<ResolveResult> results;
  coro::spawn(
      &loop,
      [](EventLoop* loop, Resolver* good, Resolver* bad, std::stop_source* stop,
         std::vector<ResolveResult>* out) -> coro::Task<> {
        out->push_back(co_await dns::resolve(*good, "both.dns.test", 443));
        out->push_back(co_await coro::withTimeout(50ms, dns::resolve(*bad, "silent.test", 443)));
        loop->runAfter(20ms, [stop] { stop->request_stop(); });
        out->push_back(
            co_await coro::withStop(stop->get_token(), dns::resolve(*bad, "silent.test", 443)));
        loop->quit();
      }(&loop, &resolver, &silentResolver, &stop, &results));
  loop.loop();
  EXPECT_FALSE(timedOut_);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(ips(results[0]), (std::vector<std::string>{"10.0.0.1", "fd00::1"}));
  EXPECT_EQ(results[1].error.errc, ResolveErrc::kTimedOut);
  EXPECT_EQ(results[1].error.message, "silent.test: timeout");
  EXPECT_EQ(results[2].error.errc, ResolveErrc::kCancelled);
  EXPECT_EQ(silentResolver.queriesInFlight(), 2u);  // detached, within c-ares's 5 s
  EXPECT_EQ(coro::detachedTaskCount(), 0u);
}

TEST_P(ResolverTest, LoopDestroyedWithCoroutineLookupsSuspended) {
  DnsServerProcess silent;
  ASSERT_TRUE(silent.startScripted("silent")) << silent.why();
  const int baseline = openFdCount();
  {
    EventLoop loop(GetParam());
    Resolver resolver(&loop, optionsFor(silent.address(), 5s));
    int resumed = 0;
    for (int i = 0; i < 20; ++i) {
      coro::spawn(&loop, [](Resolver* r, int* resumed, std::string host) -> coro::Task<> {
        const ResolveResult result = co_await dns::resolve(*r, host, 80);
        (void)result;
        ++*resumed;
      }(&resolver, &resumed, "silent" + std::to_string(i) + ".test"));
    }
    EXPECT_TRUE(runUntil(loop, [&] { return resolver.openSockets() == 1; }));
    EXPECT_EQ(resolver.queriesInFlight(), 20u);
    EXPECT_EQ(coro::detachedTaskCount(), 20u);
    EXPECT_EQ(resumed, 0);
    // The resolver goes first (declared last), then the loop, which destroys
    // the 20 suspended tasks: their queries are inert by then.
  }
  EXPECT_EQ(openFdCount(), baseline);
}

INSTANTIATE_TEST_SUITE_P(Backends, ResolverTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet::test
