// TcpServer::Options::cpuAffinity (and HttpServer::Options forwarding it):
// the I/O loops run on the CPUs asked, in kPerLoop and kHandOver alike, and
// still serve; a list the machine or the process cannot honour is refused
// by the constructor with the reason. On every backend.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "base/CpuAffinity.h"
#include "net/InetAddress.h"
#include "net/TcpServer.h"
#include "net/http/HttpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using http::HttpServer;
using test::BlockingClient;
using test::runSync;

class TcpServerAffinityTest : public test::EchoServerTest {
 protected:
  // What each I/O loop's thread may run on, seen from inside it.
  std::vector<std::vector<int>> ioLoopMasks() {
    std::vector<std::vector<int>> masks;
    for (EventLoop* loop : server_->ioLoops()) {
      masks.push_back(runSync(loop, [] { return currentThreadCpus(); }));
    }
    return masks;
  }

  void expectEchoes() {
    for (int i = 0; i < 4; ++i) {
      BlockingClient client(address_);
      ASSERT_TRUE(client.sendAll("pinned"));
      EXPECT_EQ(client.recvExactly(6), "pinned");
    }
  }

  // The std::invalid_argument a server made on the loop with `options`
  // throws ("" when none).
  std::string refusal(const TcpServer::Options& options) {
    return runSync(loop_, [&]() -> std::string {
      try {
        TcpServer server(loop_, InetAddress(0, true), "refused", options);
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      return "";
    });
  }
};

TEST_P(TcpServerAffinityTest, IoLoopsRunOnTheCpusAskedInEitherAcceptMode) {
  const std::vector<int>& allowed = allowedCpus();
  for (const TcpServer::AcceptMode mode :
       {TcpServer::AcceptMode::kPerLoop, TcpServer::AcceptMode::kHandOver}) {
    // The last CPU first, then the first: loop i on cpuAffinity[i % size].
    const std::vector<int> cpus{allowed.back(), allowed.front()};
    startServer({}, {.threads = 3, .acceptMode = mode, .cpuAffinity = cpus});
    EXPECT_EQ(ioLoopMasks(), std::vector<std::vector<int>>(
                                 {{allowed.back()}, {allowed.front()}, {allowed.back()}}));
    for (EventLoop* loop : server_->ioLoops()) {
      const int cpu = runSync(loop, [] { return ::sched_getcpu(); });
      EXPECT_TRUE(cpu == allowed.back() || cpu == allowed.front()) << cpu;
    }
    expectEchoes();
    // The server's own loop (the caller's thread) is not touched.
    EXPECT_EQ(runSync(loop_, [] { return currentThreadCpus(); }), allowed);
    stopServer();
  }
}

TEST_P(TcpServerAffinityTest, TwoLoopsOnTwoCpus) {
  const std::vector<int>& allowed = allowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs 2 CPUs, this process may use 1";
  startServer({}, {.threads = 2, .cpuAffinity = {allowed[1], allowed[0]}});
  EXPECT_EQ(ioLoopMasks(), std::vector<std::vector<int>>({{allowed[1]}, {allowed[0]}}));
  expectEchoes();
}

TEST_P(TcpServerAffinityTest, RefusesListsItCannotHonourSayingWhy) {
  const int missing = ::get_nprocs_conf();
  std::string why = refusal({.threads = 2, .cpuAffinity = {allowedCpus().front(), missing}});
  EXPECT_EQ(
      why.rfind(
          "TcpServer: Options::cpuAffinity: CPU " + std::to_string(missing) + " does not exist", 0),
      0u)
      << why;
  why = refusal({.threads = 2, .cpuAffinity = {-3}});
  EXPECT_NE(why.find("CPU -3 does not exist"), std::string::npos) << why;
  // No I/O thread to pin: the server's loop is the caller's.
  why = refusal({.threads = 0, .cpuAffinity = {allowedCpus().front()}});
  EXPECT_NE(why.find("without I/O threads"), std::string::npos) << why;
  // Wider than the process's set: every CPU it may use, and one more.
  std::vector<int> wider = allowedCpus();
  wider.push_back(missing);
  why = refusal({.threads = 4, .cpuAffinity = wider});
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
}

TEST_P(TcpServerAffinityTest, HttpServerForwardsIt) {
  const int cpu = allowedCpus().back();
  std::unique_ptr<HttpServer> http;
  runSync(loop_, [&] {
    http = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "http",
                                        HttpServer::Options{.threads = 2, .cpuAffinity = {cpu}});
    http->start();
  });
  const std::vector<EventLoop*> loops = http->tcpServer().ioLoops();
  ASSERT_EQ(loops.size(), 2u);
  for (EventLoop* loop : loops) {
    EXPECT_EQ(runSync(loop, [] { return currentThreadCpus(); }), std::vector<int>({cpu}));
  }
  runSync(loop_, [&] { http.reset(); });
  const std::string why = runSync(loop_, [&]() -> std::string {
    try {
      HttpServer refused(loop_, InetAddress(0, true), "http",
                         HttpServer::Options{.threads = 1, .cpuAffinity = {::get_nprocs_conf()}});
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  });
  EXPECT_NE(why.find("Options::cpuAffinity: CPU"), std::string::npos) << why;
}

INSTANTIATE_TEST_SUITE_P(Backends, TcpServerAffinityTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
