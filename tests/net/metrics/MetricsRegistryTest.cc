// MetricsRegistry: the text of a started server and a loop, line by line in
// the exposition format, and what removing them leaves.
#include "net/metrics/MetricsRegistry.h"

#include <regex>
#include <sstream>
#include <string>

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

INSTANTIATE_TEST_SUITE_P(Backends, MetricsRegistryTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::metrics
