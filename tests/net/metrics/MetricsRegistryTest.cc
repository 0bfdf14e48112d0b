// MetricsRegistry: the text of a started server and a loop, line by line in
// the exposition format, and what removing them leaves; a scrape while an
// I/O loop is stuck neither waits for it nor reads it as 0, and refreshes
// asked meanwhile are merged into one request in its queue.
#include "net/metrics/MetricsRegistry.h"

#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/CountDownLatch.h"
#include "gtest/gtest.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet::metrics {
namespace {

class MetricsRegistryTest : public test::EchoServerTest {};

// Every line a comment (HELP / TYPE) or `name{labels} value`, every family's
// samples together after its TYPE line, counters ending in _total.
void expectWellFormed(const std::string& text) {
  // A label value: anything but a bare quote or backslash, or an escape.
  const std::string value = R"("(?:[^"\\]|\\.)*")";
  const std::regex sample("([a-z_]+)\\{server=" + value + ",loop=" + value +
                          R"((,quantile="[0-9.]+")?\} [0-9.e+-]+)");
  const std::regex type(R"(# TYPE ([a-z_]+) (counter|gauge|summary))");
  std::istringstream lines(text);
  std::string line;
  std::string family;
  std::string kind;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (line.starts_with("# HELP ")) continue;
    if (std::regex_match(line, m, type)) {
      family = m[1];
      kind = m[2];
      if (kind == "counter") {
        EXPECT_TRUE(family.ends_with("_total")) << line;
      }
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, m, sample)) << line;
    EXPECT_TRUE(m[1] == family || m[1] == family + "_count") << line << " under " << family;
  }
}

TEST_P(MetricsRegistryTest, RendersAServerAndALoop) {
  startServer({}, {.threads = 2});
  test::BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("ping"));
  ASSERT_EQ(client.recvExactly(4), "ping");
  MetricsRegistry registry;
  registry.addServer(server_.get());
  registry.addLoop(loop_, "test \"main\"", "main");
  const std::string text = registry.render();
  expectWellFormed(text);
  EXPECT_NE(text.find("libnet_connections_open{server=\"test\",loop=\"0\"}"), std::string::npos);
  EXPECT_NE(text.find("libnet_connections_open{server=\"test\",loop=\"1\"}"), std::string::npos);
  EXPECT_NE(text.find("libnet_bytes_received_total{server=\"test\",loop="), std::string::npos);
  EXPECT_NE(text.find("libnet_loop_turns_total{server=\"test \\\"main\\\"\",loop=\"main\"}"),
            std::string::npos);
  EXPECT_NE(text.find("quantile=\"0.99\""), std::string::npos);
  // The received bytes are there, on one of the two loops.
  EXPECT_TRUE(std::regex_search(
      text, std::regex(R"(libnet_bytes_received_total\{server="test",loop="[01]"\} 4\n)")));
  registry.remove(server_.get());
  registry.remove(loop_);
  EXPECT_EQ(registry.render(), "");
}

// The loop that holds the (one) connection.
size_t busyLoop(const TcpServer& server) {
  const std::vector<TcpServer::LoopStats> stats = server.loopStats();
  for (size_t i = 0; i < stats.size(); ++i) {
    if (stats[i].connections > 0) return i;
  }
  return stats.size();
}

std::string queuedSample(size_t loop, size_t bytes) {
  return "libnet_output_queued_bytes{server=\"test\",loop=\"" + std::to_string(loop) + "\"} " +
         std::to_string(bytes) + "\n";
}

// A scrape served on one I/O loop while another is stuck in a callback: it
// answers without waiting (its loop counts no blocking wait), with the stuck
// loop's last sum of its queued output (not 0), and the stuck loop's queue
// holds one refresh request however many scrapes asked for one.
TEST_P(MetricsRegistryTest, AScrapeNeverWaitsForAStuckLoop) {
  startServer({}, {.threads = 2});
  constexpr size_t kSent = 4 << 20;
  // A client that sends and never reads: the echo queues on its loop.
  test::BlockingClient client(address_, 4096);
  ASSERT_TRUE(client.sendAll(std::string(kSent, 'x')));
  ASSERT_TRUE(test::waitUntil([&] {
    const size_t k = busyLoop(*server_);
    return k < 2 && server_->loopStats()[k].bytesReceived == kSent;
  }));
  const size_t stuck = busyLoop(*server_);
  const size_t other = 1 - stuck;
  EventLoop* stuckLoop = server_->ioLoops()[stuck];
  EventLoop* otherLoop = server_->ioLoops()[other];
  MetricsRegistry registry;
  registry.addServer(server_.get());

  CountDownLatch entered(1);
  CountDownLatch release(1);
  size_t expected = 0;
  stuckLoop->runInLoop([&] {
    // Its own sum, taken at once (nothing of this loop moves until released).
    expected = server_->queuedOutput(Duration::zero())[stuck];
    entered.countDown();
    EXPECT_TRUE(release.waitFor(test::kWait));
  });
  ASSERT_TRUE(entered.waitFor(test::kWait));
  ASSERT_GT(expected, 0U);

  const auto [text, waits] = test::runSync(otherLoop, [&] {
    const uint64_t before = otherLoop->metrics().blockingWaits;
    for (int i = 0; i < 100; ++i) registry.refresh();
    std::string rendered = registry.render();
    return std::make_pair(rendered, otherLoop->metrics().blockingWaits - before);
  });
  EXPECT_EQ(waits, 0U) << "the scrape's loop blocked waiting for the stuck one";
  EXPECT_NE(text.find(queuedSample(stuck, expected)), std::string::npos)
      << "want " << queuedSample(stuck, expected) << text;
  EXPECT_EQ(stuckLoop->queueSize(), 1U);
  release.countDown();
  // The request queued meanwhile is answered once the loop goes on.
  ASSERT_TRUE(test::waitUntil([&] { return stuckLoop->queueSize() == 0; }));
  EXPECT_NE(registry.render().find("libnet_loop_blocking_waits_total{server=\"test\",loop=\""),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, MetricsRegistryTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::metrics
