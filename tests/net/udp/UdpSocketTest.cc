// udp::UdpSocket on both backends: echo over IPv4 and IPv6, truncation
// reported, the send queue's bound under a burst, a receiver that never
// reads, ICMP errors on a connected socket, multicast on loopback, callbacks
// that throw, destruction from inside a callback.
#include "net/udp/UdpSocket.h"

#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "net/EventLoop.h"
#include "tests/net/TestUtil.h"

using namespace libnet;
using namespace libnet::udp;

namespace {

class UdpSocketTest : public test::LoopTest {};

InetAddress loopback(bool v6) { return InetAddress(0, true, v6); }

// A datagram's content from its index and size (checked on the way back).
std::string payload(uint32_t index, size_t size) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>((index * 131 + i * 7) & 0xFF);
  return s;
}

void echoTest(PollerKind kind, bool v6, test::LoopTest* fixture) {
  EventLoop loop(kind);
  UdpSocket server(&loop, {.bind = loopback(v6)});
  server.setReceiveCallback([&](const InetAddress& from, std::string_view data, DatagramFlags f) {
    EXPECT_FALSE(f.truncated);
    EXPECT_EQ(server.sendTo(from, data), SendResult::kSent);
  });
  server.start();
  UdpSocket client(&loop, {.bind = loopback(v6)});
  const std::vector<size_t> sizes = {0, 1, 100, 1472, 9000, 65507};
  size_t got = 0;
  client.setReceiveCallback([&](const InetAddress& from, std::string_view data, DatagramFlags f) {
    EXPECT_EQ(from, server.localAddress());
    EXPECT_FALSE(f.truncated);
    EXPECT_EQ(f.size, data.size());
    ASSERT_LT(got, sizes.size());
    EXPECT_EQ(data, payload(static_cast<uint32_t>(got), sizes[got])) << "datagram " << got;
    if (++got == sizes.size()) loop.quit();
  });
  client.start();
  EXPECT_EQ(server.localAddress().family(), v6 ? AF_INET6 : AF_INET);
  EXPECT_NE(server.localAddress().port(), 0);
  // One at a time, so that the order is certain.
  loop.runAfter(std::chrono::seconds(10), [&] { loop.quit(); });
  (void)client.sendTo(server.localAddress(), payload(0, sizes[0]));
  size_t sent = 1;
  loop.runEvery(std::chrono::milliseconds(1), [&] {
    if (sent == got && sent < sizes.size()) {
      (void)client.sendTo(server.localAddress(), payload(static_cast<uint32_t>(sent), sizes[sent]));
      ++sent;
    }
  });
  loop.loop();
  EXPECT_EQ(got, sizes.size());
  EXPECT_EQ(server.receivedDatagrams(), sizes.size());
  EXPECT_EQ(client.droppedDatagrams(), 0u);
  (void)fixture;
}

TEST_P(UdpSocketTest, EchoIPv4) { echoTest(GetParam(), false, this); }

TEST_P(UdpSocketTest, EchoIPv6) { echoTest(GetParam(), true, this); }

TEST_P(UdpSocketTest, ATruncatedDatagramIsReportedWithItsRealSize) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  UdpSocket receiver(&loop, {.bind = loopback(false), .maxDatagramSize = 100});
  std::vector<std::pair<std::string, DatagramFlags>> got;
  receiver.setReceiveCallback([&](const InetAddress&, std::string_view data, DatagramFlags f) {
    got.emplace_back(std::string(data), f);
    if (got.size() == 3) loop.quit();
  });
  receiver.start();
  UdpSocket sender(&loop, {.bind = loopback(false)});
  sender.start();
  const std::string big = payload(1, 1000);
  (void)sender.sendTo(receiver.localAddress(), payload(0, 100));
  (void)sender.sendTo(receiver.localAddress(), big);
  (void)sender.sendTo(receiver.localAddress(), payload(2, 65507));
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FALSE(got[0].second.truncated);
  EXPECT_EQ(got[0].second.size, 100u);
  EXPECT_TRUE(got[1].second.truncated);
  EXPECT_EQ(got[1].second.size, 1000u);
  EXPECT_EQ(got[1].first, big.substr(0, 100));
  EXPECT_TRUE(got[2].second.truncated);
  EXPECT_EQ(got[2].second.size, 65507u);
  EXPECT_EQ(receiver.truncatedDatagrams(), 2u);
}

// Loopback never reports a full UDP send buffer (the sender's memory is
// freed as the datagram is handed over), so a receiver that never reads
// makes the kernel drop at the receiver. The send queue fills in a burst
// larger than its bound within one turn (io_uring, where a turn's sends
// leave at its end) or within one received batch (epoll). Either way every
// datagram is counted as sent or dropped, and the queue stays within its
// bound.
TEST_P(UdpSocketTest, ABurstPastTheQueueBoundIsDroppedAndCounted) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  // A receiver that never reads, with the smallest buffer.
  UniqueFd sink(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const int one = 1;
  ::setsockopt(sink.get(), SOL_SOCKET, SO_RCVBUF, &one, sizeof one);
  const InetAddress sinkAddr = loopback(false);
  ASSERT_EQ(::bind(sink.get(), sinkAddr.sockAddr(), sinkAddr.sockLen()), 0);
  sockaddr_storage bound{};
  socklen_t boundLen = sizeof bound;
  ASSERT_EQ(::getsockname(sink.get(), reinterpret_cast<sockaddr*>(&bound), &boundLen), 0);
  InetAddress target;
  target.setSockAddr(bound);
  constexpr size_t kBound = 64 * 1024;
  constexpr size_t kSize = 1000;
  constexpr int kBurst = 2000;
  UdpSocket sender(&loop, {.bind = loopback(false), .sendBufferSize = 1, .maxQueuedBytes = kBound});
  int drained = 0;
  sender.setDrainedCallback([&] { ++drained; });
  sender.start();
  int sent = 0, queued = 0, dropped = 0;
  size_t maxQueued = 0;
  const std::string data(kSize, 'x');
  loop.runInLoop([&] {
    for (int i = 0; i < kBurst; ++i) {
      switch (sender.sendTo(target, data)) {
        case SendResult::kSent:
          ++sent;
          break;
        case SendResult::kQueued:
          ++queued;
          break;
        case SendResult::kDropped:
          ++dropped;
          break;
        case SendResult::kError:
          ADD_FAILURE() << "send error " << sender.lastSendError();
          break;
      }
      maxQueued = std::max(maxQueued, sender.queuedBytes());
    }
  });
  loop.runEvery(std::chrono::milliseconds(1), [&] {
    if (sender.queuedDatagrams() == 0) loop.quit();
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(sent + queued + dropped, kBurst);
  EXPECT_EQ(sender.sentDatagrams(), static_cast<uint64_t>(sent + queued));
  EXPECT_EQ(sender.droppedDatagrams(), static_cast<uint64_t>(dropped));
  EXPECT_LE(maxQueued, kBound + kSize);
  EXPECT_EQ(sender.queuedBytes(), 0u);
  if (loop.pollerKind() == PollerKind::kIoUring) {
    // The turn's sends leave at its end: the bound was reached.
    EXPECT_EQ(sent, static_cast<int>(kBound / kSize));
    EXPECT_EQ(dropped, kBurst - sent);
    EXPECT_EQ(drained, 1);
  }
}

// On epoll, what a receive callback sends is queued until the batch it came
// in has been handed up; a burst past the bound there sends what is queued
// and goes on, so nothing is lost on loopback, and the queue stays bounded.
TEST_P(UdpSocketTest, ABurstFromAReceiveCallbackStaysWithinTheBound) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  constexpr size_t kBound = 16 * 1024;
  UdpSocket sink(&loop, {.bind = loopback(false), .receiveBufferSize = 4 * 1024 * 1024});
  uint64_t sunk = 0;
  sink.setReceiveCallback([&](const InetAddress&, std::string_view, DatagramFlags) { ++sunk; });
  sink.start();
  UdpSocket burster(&loop, {.bind = loopback(false), .maxQueuedBytes = kBound});
  size_t maxQueued = 0;
  int results[4] = {0, 0, 0, 0};
  burster.setReceiveCallback([&](const InetAddress&, std::string_view, DatagramFlags) {
    for (int i = 0; i < 200; ++i) {
      ++results[static_cast<int>(burster.sendTo(sink.localAddress(), std::string(500, 'y')))];
      maxQueued = std::max(maxQueued, burster.queuedBytes());
    }
  });
  burster.start();
  UdpSocket trigger(&loop, {.bind = loopback(false)});
  trigger.start();
  (void)trigger.sendTo(burster.localAddress(), "go");
  loop.runEvery(std::chrono::milliseconds(1), [&] {
    if (results[0] + results[1] + results[2] == 200 && burster.queuedDatagrams() == 0 &&
        sunk + burster.droppedDatagrams() == 200) {
      loop.quit();
    }
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(results[3], 0);
  EXPECT_LE(maxQueued, kBound + 500);
  EXPECT_EQ(burster.droppedDatagrams(), static_cast<uint64_t>(results[2]));
  EXPECT_EQ(sunk, 200u - burster.droppedDatagrams());
}

// What the kernel refuses as addressed: too large for the family, a
// destination of a family the socket cannot reach, port 0.
struct Refusal {
  const char* what;
  InetAddress to;
  size_t size;
  int err;
};

// Sends each of `refusals` and checks it is kError with the kernel's errno
// at once; then `fits` (the largest datagram the family takes) is kSent.
void expectRefusedAtOnce(UdpSocket& sock, const std::vector<Refusal>& refusals,
                         const InetAddress& to, size_t fits) {
  for (const Refusal& r : refusals) {
    EXPECT_EQ(sock.sendTo(r.to, std::string(r.size, 'r')), SendResult::kError) << r.what;
    EXPECT_EQ(sock.lastSendError(), r.err) << r.what << ": " << std::strerror(sock.lastSendError());
  }
  EXPECT_EQ(sock.sendTo(to, std::string(fits, 'f')), SendResult::kSent);
}

// Both backends say the same, whether the send is the loop's own (epoll:
// sendmsg at once; io_uring: one of the turn's batch) or a reply from
// inside a receive callback (epoll: queued behind the received batch): a
// datagram the kernel refuses is kError with its errno at once, counted in
// errors() and not in sentDatagrams(), and no error callback follows.
TEST_P(UdpSocketTest, DatagramsTheKernelRefusesAreErrorsAtOnce) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  UdpSocket receiver(&loop, {.bind = loopback(false)});
  std::vector<size_t> received;
  receiver.setReceiveCallback([&](const InetAddress&, std::string_view data, DatagramFlags) {
    received.push_back(data.size());
    if (received.size() == 2) loop.quit();
  });
  receiver.start();
  const InetAddress to = receiver.localAddress();
  const std::vector<Refusal> refusals = {
      {"65,508 bytes over IPv4", to, 65508, EMSGSIZE},
      {"an IPv6 peer of an IPv4 socket", InetAddress("::1", to.port()), 10, EAFNOSUPPORT},
      {"port 0", InetAddress("127.0.0.1", 0), 10, EINVAL},
  };
  UdpSocket sock(&loop, {.bind = loopback(false)});
  int lateErrors = 0;
  sock.setErrorCallback([&](std::string_view call, int err) {
    ++lateErrors;
    ADD_FAILURE() << call << ": " << std::strerror(err);
  });
  sock.setReceiveCallback([&](const InetAddress&, std::string_view, DatagramFlags) {
    expectRefusedAtOnce(sock, refusals, to, 65507);
  });
  sock.start();
  expectRefusedAtOnce(sock, refusals, to, 65507);
  UdpSocket trigger(&loop, {.bind = loopback(false)});
  trigger.start();
  EXPECT_EQ(trigger.sendTo(sock.localAddress(), "go"), SendResult::kSent);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(received, (std::vector<size_t>{65507, 65507}));
  EXPECT_EQ(lateErrors, 0);
  EXPECT_EQ(sock.errors(), 2 * refusals.size());
  EXPECT_EQ(sock.sentDatagrams(), 2u);
}

// An IPv6 socket takes 20 bytes more, and one that is IPv6-only cannot
// reach IPv4 peers (plain or IPv4-mapped): refused at once too.
TEST_P(UdpSocketTest, AnIpv6SocketsRefusalsAreErrorsAtOnce) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  UdpSocket receiver(&loop, {.bind = loopback(true)});
  size_t received = 0;
  receiver.setReceiveCallback([&](const InetAddress&, std::string_view data, DatagramFlags) {
    received = data.size();
    loop.quit();
  });
  receiver.start();
  const InetAddress to = receiver.localAddress();
  UdpSocket v4(&loop, {.bind = loopback(false)});
  v4.start();
  // ::1 is an IPv6-only bind (the kernel's v6only for a non-wildcard
  // address does not matter: the socket cannot have an IPv4 source).
  UdpSocket sock(&loop, {.bind = loopback(true)});
  sock.start();
  const int v6only = [&] {
    int on = 0;
    socklen_t len = sizeof on;
    return ::getsockopt(sock.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &on, &len) == 0 ? on : -1;
  }();
  std::vector<Refusal> refusals = {
      {"65,528 bytes over IPv6", to, 65528, EMSGSIZE},
      {"port 0", InetAddress("::1", 0), 10, EINVAL},
  };
  if (v6only == 1) {
    refusals.push_back({"IPv4 from an IPv6-only socket", v4.localAddress(), 10, ENETUNREACH});
    refusals.push_back({"IPv4-mapped from an IPv6-only socket",
                        InetAddress("::ffff:127.0.0.1", v4.localAddress().port()), 10,
                        ENETUNREACH});
  }
  expectRefusedAtOnce(sock, refusals, to, 65527);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(received, 65527u);
  EXPECT_EQ(sock.errors(), refusals.size());
}

TEST_P(UdpSocketTest, AConnectedSocketReportsIcmpPortUnreachable) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  // A port that nothing listens on: bind one, note it, close it.
  InetAddress closedPort;
  {
    UdpSocket gone(&loop, {.bind = loopback(false)});
    closedPort = gone.localAddress();
  }
  UdpSocket sock(&loop, {.bind = loopback(false)});
  std::vector<int> errors;
  sock.setErrorCallback([&](std::string_view, int err) {
    errors.push_back(err);
    loop.quit();
  });
  sock.setReceiveCallback([&](const InetAddress&, std::string_view, DatagramFlags) {
    ADD_FAILURE() << "nothing should arrive";
  });
  sock.start();
  sock.connect(closedPort);
  EXPECT_EQ(sock.send("anyone?"), SendResult::kSent);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0], ECONNREFUSED);
  EXPECT_GE(sock.errors(), 1u);
  // The socket goes on: a peer that does listen now gets the next one.
}

TEST_P(UdpSocketTest, AnErrorCallbackThatThrowsIsContained) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  InetAddress closedPort;
  {
    UdpSocket gone(&loop, {.bind = loopback(false)});
    closedPort = gone.localAddress();
  }
  UdpSocket sock(&loop, {.bind = loopback(false)});
  int calls = 0;
  sock.setErrorCallback([&](std::string_view, int) {
    if (++calls == 2) loop.quit();
    throw std::runtime_error("error callback failed");
  });
  sock.start();
  sock.connect(closedPort);
  (void)sock.send("one");
  // The second refusal comes only if the socket still works after the throw.
  loop.runEvery(std::chrono::milliseconds(5), [&] {
    if (calls == 1) (void)sock.send("two");
  });
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(calls, 2);
}

TEST_P(UdpSocketTest, SendOnAnUnconnectedSocketOrBeforeStartThrows) {
  EventLoop loop(GetParam());
  UdpSocket sock(&loop, {.bind = loopback(false)});
  EXPECT_THROW((void)sock.sendTo(sock.localAddress(), "x"), std::logic_error);
  sock.start();
  EXPECT_THROW((void)sock.send("x"), std::logic_error);
  EXPECT_THROW(sock.setReceiveCallback(nullptr), std::logic_error);
  EXPECT_THROW(sock.start(), std::logic_error);
}

TEST_P(UdpSocketTest, BadOptionsAreRefusedClearly) {
  EventLoop loop(GetParam());
  EXPECT_THROW(UdpSocket(&loop, {.maxDatagramSize = 0}), std::invalid_argument);
  EXPECT_THROW(UdpSocket(&loop, {.maxDatagramSize = 70000}), std::invalid_argument);
  UdpSocket first(&loop, {.bind = loopback(false)});
  try {
    UdpSocket second(&loop, {.bind = first.localAddress()});
    ADD_FAILURE() << "bound a port in use";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EADDRINUSE);
    EXPECT_NE(std::string(e.what()).find(first.localAddress().toIpPort()), std::string::npos);
  }
}

TEST_P(UdpSocketTest, MulticastOnLoopback) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  const unsigned lo = ::if_nametoindex("lo");
  if (lo == 0) GTEST_SKIP() << "no loopback interface index";
  const InetAddress group("239.255.42.99", 0);
  std::unique_ptr<UdpSocket> member;
  try {
    member = std::make_unique<UdpSocket>(&loop, UdpSocket::Options{.bind = InetAddress(0),
                                                                   .reuseAddr = true,
                                                                   .multicastGroups = {group},
                                                                   .multicastInterface = lo});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "the kernel refuses the multicast join here: " << e.what();
  }
  std::string got;
  member->setReceiveCallback([&](const InetAddress&, std::string_view data, DatagramFlags) {
    got = data;
    loop.quit();
  });
  member->start();
  UdpSocket sender(&loop, {.bind = InetAddress(0), .multicastInterface = lo});
  sender.start();
  const InetAddress to("239.255.42.99", member->localAddress().port());
  const SendResult r = sender.sendTo(to, "to the group");
  if (r == SendResult::kError) {
    GTEST_SKIP() << "multicast send refused here: " << strerror(sender.lastSendError());
  }
  bool timedOut = false;
  loop.runAfter(std::chrono::seconds(2), [&] {
    timedOut = true;
    loop.quit();
  });
  loop.loop();
  if (timedOut) GTEST_SKIP() << "no multicast delivery on loopback in this environment";
  EXPECT_EQ(got, "to the group");
}

TEST_P(UdpSocketTest, CallbacksThatThrowCostNothingButTheirDatagram) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  UdpSocket receiver(&loop, {.bind = loopback(false)});
  std::vector<std::string> got;
  receiver.setReceiveCallback([&](const InetAddress&, std::string_view data, DatagramFlags) {
    got.emplace_back(data);
    if (data == "throw") throw std::runtime_error("boom");
    if (data == "throw int") throw 42;
    if (got.size() == 4) loop.quit();
  });
  receiver.start();
  UdpSocket sender(&loop, {.bind = loopback(false)});
  sender.start();
  for (const char* m : {"a", "throw", "throw int", "b"}) {
    (void)sender.sendTo(receiver.localAddress(), m);
  }
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "throw", "throw int", "b"}));
  EXPECT_EQ(receiver.receivedDatagrams(), 4u);
}

TEST_P(UdpSocketTest, ASocketDestroyedInsideItsCallbackGoesCleanly) {
  const int fdsBefore = test::openFdCount();
  {
    EventLoop loop(GetParam());
    armWatchdog(loop);
    auto receiver = std::make_unique<UdpSocket>(&loop, UdpSocket::Options{.bind = loopback(false)});
    int calls = 0;
    receiver->setReceiveCallback([&](const InetAddress&, std::string_view, DatagramFlags) {
      ++calls;
      receiver.reset();
      loop.runAfter(std::chrono::milliseconds(50), [&] { loop.quit(); });
    });
    receiver->start();
    UdpSocket sender(&loop, {.bind = loopback(false)});
    sender.start();
    for (int i = 0; i < 10; ++i) (void)sender.sendTo(receiver->localAddress(), "x");
    loop.loop();
    EXPECT_FALSE(timedOut_);
    EXPECT_EQ(calls, 1);
  }
  EXPECT_EQ(test::openFdCount(), fdsBefore);
}

// UDP_SEGMENT: one send of 250 bytes with a 100-byte segment size leaves as
// three datagrams (100, 100, 50), segmented by the kernel.
TEST_P(UdpSocketTest, GsoSplitsOneSendIntoSegments) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  std::unique_ptr<UdpSocket> sender;
  try {
    sender = std::make_unique<UdpSocket>(
        &loop, UdpSocket::Options{.bind = loopback(false), .gsoSegmentSize = 100});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "no UDP_SEGMENT here: " << e.what();
  }
  UdpSocket receiver(&loop, {.bind = loopback(false)});
  std::vector<std::string> got;
  receiver.setReceiveCallback([&](const InetAddress&, std::string_view data, DatagramFlags) {
    got.emplace_back(data);
    if (got.size() == 3) loop.quit();
  });
  receiver.start();
  sender->start();
  const std::string data = payload(7, 250);
  EXPECT_EQ(sender->sendTo(receiver.localAddress(), data), SendResult::kSent);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(got, (std::vector<std::string>{data.substr(0, 100), data.substr(100, 100),
                                           data.substr(200)}));
  EXPECT_EQ(sender->sentDatagrams(), 1u);
}

// UDP_GRO: a GSO send of 1,000 bytes in 100-byte segments reaches a GRO
// receiver coalesced (loopback keeps the GSO packet whole for a socket
// that takes GRO), and is handed up as the ten datagrams it was.
TEST_P(UdpSocketTest, GroHandsUpEachCoalescedDatagram) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  std::unique_ptr<UdpSocket> sender;
  std::unique_ptr<UdpSocket> receiver;
  try {
    sender = std::make_unique<UdpSocket>(
        &loop, UdpSocket::Options{.bind = loopback(false), .gsoSegmentSize = 100});
    receiver = std::make_unique<UdpSocket>(
        &loop, UdpSocket::Options{.bind = loopback(false), .gro = true});
  } catch (const std::system_error& e) {
    GTEST_SKIP() << "no UDP_SEGMENT / UDP_GRO here: " << e.what();
  }
  std::vector<std::string> got;
  receiver->setReceiveCallback([&](const InetAddress&, std::string_view data, DatagramFlags f) {
    EXPECT_FALSE(f.truncated);
    got.emplace_back(data);
    if (got.size() == 20) loop.quit();
  });
  receiver->start();
  sender->start();
  const std::string first = payload(3, 1000);
  const std::string second = payload(4, 1000);
  EXPECT_EQ(sender->sendTo(receiver->localAddress(), first), SendResult::kSent);
  EXPECT_EQ(sender->sendTo(receiver->localAddress(), second), SendResult::kSent);
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(got.size(), 20u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(got[i], first.substr(i * 100, 100)) << i;
    EXPECT_EQ(got[10 + i], second.substr(i * 100, 100)) << i;
  }
  EXPECT_EQ(receiver->receivedDatagrams(), 20u);
  EXPECT_THROW(UdpSocket(&loop, {.maxDatagramSize = 1500, .gro = true}), std::invalid_argument);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Backends, UdpSocketTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);
