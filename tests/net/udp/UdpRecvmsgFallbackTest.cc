// The io_uring datagram strategy on a kernel without multishot recvmsg
// (simulated through the probe, before anything asks it): it receives by
// readiness and recvmsg(2) instead, with the same results: echo, truncation
// reported, a socket destroyed inside its callback.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/poller/UringProbe.h"
#include "net/udp/UdpSocket.h"
#include "tests/net/TestUtil.h"

using namespace libnet;
using namespace libnet::udp;

namespace {

// Before main(), so before the first probe of the process.
const bool kSimulated = [] {
  UringProbe::simulateFailure(UringProbe::Stage::kMultishotRecvmsg);
  return true;
}();

TEST(UdpRecvmsgFallbackTest, EchoAndTruncationByReadiness) {
  ASSERT_TRUE(kSimulated);
  LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(PollerKind::kIoUring);
  ASSERT_TRUE(UringProbe::result().ok);
  ASSERT_FALSE(UringProbe::result().multishotRecvmsg);
  EventLoop loop(PollerKind::kIoUring);
  ASSERT_EQ(loop.pollerKind(), PollerKind::kIoUring);
  UdpSocket server(&loop, {.bind = InetAddress(0, true), .maxDatagramSize = 1000});
  server.setReceiveCallback([&](const InetAddress& from, std::string_view data, DatagramFlags f) {
    (void)server.sendTo(from,
                        f.truncated ? "truncated " + std::to_string(f.size) : std::string(data));
  });
  server.start();
  UdpSocket client(&loop, {.bind = InetAddress(0, true)});
  std::vector<std::string> got;
  client.setReceiveCallback([&](const InetAddress&, std::string_view data, DatagramFlags) {
    got.emplace_back(data);
    if (got.size() == 3) loop.quit();
  });
  client.start();
  (void)client.sendTo(server.localAddress(), "one");
  (void)client.sendTo(server.localAddress(), std::string(5000, 'x'));
  (void)client.sendTo(server.localAddress(), "three");
  loop.runAfter(std::chrono::seconds(10), [&] { loop.quit(); });
  loop.loop();
  EXPECT_EQ(got, (std::vector<std::string>{"one", "truncated 5000", "three"}));
  EXPECT_EQ(server.truncatedDatagrams(), 1u);
}

TEST(UdpRecvmsgFallbackTest, DestroyedInsideItsCallback) {
  LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(PollerKind::kIoUring);
  const int fdsBefore = test::openFdCount();
  {
    EventLoop loop(PollerKind::kIoUring);
    auto receiver =
        std::make_unique<UdpSocket>(&loop, UdpSocket::Options{.bind = InetAddress(0, true)});
    int calls = 0;
    receiver->setReceiveCallback([&](const InetAddress&, std::string_view, DatagramFlags) {
      ++calls;
      receiver.reset();
      loop.runAfter(std::chrono::milliseconds(50), [&] { loop.quit(); });
    });
    receiver->start();
    UdpSocket sender(&loop, {.bind = InetAddress(0, true)});
    sender.start();
    for (int i = 0; i < 5; ++i) (void)sender.sendTo(receiver->localAddress(), "x");
    loop.runAfter(std::chrono::seconds(10), [&] { loop.quit(); });
    loop.loop();
    EXPECT_EQ(calls, 1);
  }
  EXPECT_EQ(test::openFdCount(), fdsBefore);
}

}  // namespace
