// udp::CoroUdpSocket on both backends: recvFrom/sendTo round trips,
// datagrams buffered while no task waits (bounded), withTimeout and
// withStop ending a wait, a task waiting for room in the send queue, and
// the socket destroyed under waiting tasks.
#include "net/udp/CoroUdp.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/coro/Coro.h"
#include "tests/net/TestUtil.h"

using namespace libnet;
using namespace libnet::udp;
using namespace libnet::coro;
using namespace std::chrono_literals;

namespace {

class CoroUdpTest : public test::LoopTest {};

UdpSocket::Options local() { return {.bind = InetAddress(0, true)}; }

Task<> echoServer(CoroUdpSocket* sock, int count) {
  for (int i = 0; i < count; ++i) {
    Received in = co_await sock->recvFrom();
    if (in.error != Errc::kOk) co_return;
    (void)co_await sock->sendTo(in.from, in.data);
  }
}

Task<> client(EventLoop* loop, CoroUdpSocket* sock, InetAddress server,
              std::vector<std::string>* got) {
  for (int i = 0; i < 100; ++i) {
    const std::string message = "datagram " + std::to_string(i) + std::string(i * 100, 'z');
    const Sent sent = co_await sock->sendTo(server, message);
    EXPECT_EQ(sent.error, Errc::kOk);
    Received in = co_await withTimeout(5s, sock->recvFrom());
    if (in.error != Errc::kOk) break;
    EXPECT_EQ(in.from, server);
    got->push_back(in.data);
  }
  loop->quit();
}

TEST_P(CoroUdpTest, EchoRoundTrips) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  CoroUdpSocket server(&loop, local());
  CoroUdpSocket sock(&loop, local());
  std::vector<std::string> got;
  spawn(&loop, echoServer(&server, 100));
  spawn(&loop, client(&loop, &sock, server.localAddress(), &got));
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(got.size(), 100u);
  EXPECT_EQ(got[42], "datagram 42" + std::string(4200, 'z'));
}

Task<> receiveAfter(EventLoop* loop, CoroUdpSocket* sock, std::vector<std::string>* got) {
  co_await sleep(100ms);
  for (;;) {
    Received in = co_await withTimeout(200ms, sock->recvFrom());
    if (in.error != Errc::kOk) {
      EXPECT_EQ(in.error, Errc::kTimedOut);
      break;
    }
    got->push_back(in.data);
  }
  loop->quit();
}

TEST_P(CoroUdpTest, DatagramsWaitForTheTaskUpToTheBound) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  CoroUdpSocket sock(&loop, local(), 5);
  UdpSocket sender(&loop, local());
  sender.start();
  for (int i = 0; i < 8; ++i) (void)sender.sendTo(sock.localAddress(), std::to_string(i));
  std::vector<std::string> got;
  spawn(&loop, receiveAfter(&loop, &sock, &got));
  loop.loop();
  ASSERT_FALSE(timedOut_);
  EXPECT_EQ(got, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  EXPECT_EQ(sock.bufferDropped(), 3u);
}

Task<> waitForever(CoroUdpSocket* sock, Errc* result, int* resumed) {
  Received in = co_await sock->recvFrom();
  *result = in.error;
  ++*resumed;
}

TEST_P(CoroUdpTest, AStopRequestEndsTheWait) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  CoroUdpSocket sock(&loop, local());
  std::stop_source stop;
  Errc result = Errc::kOk;
  int resumed = 0;
  spawn(&loop, waitForever(&sock, &result, &resumed), stop.get_token());
  loop.runAfter(20ms, [&] { stop.request_stop(); });
  loop.runAfter(200ms, [&] { loop.quit(); });
  loop.loop();
  EXPECT_EQ(resumed, 1);
  EXPECT_EQ(result, Errc::kCancelled);
  // A datagram arriving now is buffered, not handed to the finished task.
}

TEST_P(CoroUdpTest, DestroyingTheSocketResumesWaitersWithClosed) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  auto sock = std::make_unique<CoroUdpSocket>(&loop, local());
  Errc result = Errc::kOk;
  int resumed = 0;
  spawn(&loop, waitForever(sock.get(), &result, &resumed));
  loop.runAfter(20ms, [&] {
    sock.reset();
    loop.quit();
  });
  loop.loop();
  EXPECT_EQ(resumed, 1);
  EXPECT_EQ(result, Errc::kClosed);
}

Task<> sendBurst(EventLoop* loop, CoroUdpSocket* sock, InetAddress to, int count,
                 std::vector<Sent>* results) {
  for (int i = 0; i < count; ++i)
    results->push_back(co_await sock->sendTo(to, std::string(1000, 'b')));
  loop->quit();
}

// A task sending faster than the queue takes waits for room instead of
// losing datagrams (on io_uring a turn's sends leave at its end, so a
// tight loop fills the queue at once).
TEST_P(CoroUdpTest, ASenderWaitsForRoomInsteadOfDropping) {
  EventLoop loop(GetParam());
  armWatchdog(loop);
  UdpSocket sink(&loop, {.bind = InetAddress(0, true), .receiveBufferSize = 4 * 1024 * 1024});
  uint64_t got = 0;
  sink.setReceiveCallback([&](const InetAddress&, std::string_view, DatagramFlags) { ++got; });
  sink.start();
  CoroUdpSocket sock(&loop, {.bind = InetAddress(0, true), .maxQueuedBytes = 8 * 1024});
  std::vector<Sent> results;
  spawn(&loop, sendBurst(&loop, &sock, sink.localAddress(), 500, &results));
  loop.loop();
  ASSERT_FALSE(timedOut_);
  ASSERT_EQ(results.size(), 500u);
  for (const Sent& s : results) {
    EXPECT_EQ(s.error, Errc::kOk);
    EXPECT_NE(s.result, SendResult::kDropped);
  }
  EXPECT_EQ(sock.socket().droppedDatagrams(), 0u);
  EXPECT_LE(sock.socket().queuedBytes(), 8u * 1024 + 1000);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Backends, CoroUdpTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);
