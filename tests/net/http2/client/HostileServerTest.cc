// http2::ClientConnection against scripted servers (frames written by hand on
// a raw socket), on every backend: trailers, RST_STREAM mid-body, GOAWAY
// with streams above and below its last stream id, the connection dropped
// mid-stream, a PING never acknowledged, and hostile servers: oversized
// headers, an HPACK bomb, SETTINGS and PING floods, DATA past the window,
// garbage, and a server that sends nothing.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "tests/net/http2/client/ClientTestSupport.h"
#include "tests/net/http2/client/ScriptedServer.h"

namespace libnet::http2::test {
namespace {

using libnet::test::runSync;
using libnet::test::waitUntil;

constexpr uint8_t kEndHeaders = NGHTTP2_FLAG_END_HEADERS;
constexpr uint8_t kEndStream = NGHTTP2_FLAG_END_STREAM;

std::string u32(uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  return out;
}

std::string rstStream(int32_t id, uint32_t code) {
  return frame(NGHTTP2_RST_STREAM, 0, id, u32(code));
}

std::string goAway(int32_t last, uint32_t code) {
  return frame(NGHTTP2_GOAWAY, 0, 0, u32(static_cast<uint32_t>(last)) + u32(code));
}

std::string head(int32_t id, int status, bool end,
                 const std::vector<std::pair<std::string, std::string>>& fields = {}) {
  return frame(NGHTTP2_HEADERS, kEndHeaders | (end ? kEndStream : 0), id,
               responseBlock(status, fields));
}

class HostileServerTest : public ClientFixture {
 protected:
  void serve(ScriptedServer::Script script) {
    server_ = std::make_unique<ScriptedServer>(std::move(script));
  }
  void stopServer() override { server_.reset(); }

  // GET requests submitted before the connection is up (sent together).
  std::vector<std::shared_ptr<Outcome>> gets(int n) {
    std::vector<std::shared_ptr<Outcome>> out;
    for (int i = 0; i < n; ++i) {
      out.push_back(std::make_shared<Outcome>());
      submit(request("GET", "/" + std::to_string(i)), {}, true, out.back());
    }
    return out;
  }

  std::unique_ptr<ScriptedServer> server_;
  std::atomic<uint32_t> goAwayCode_{UINT32_MAX};
};

TEST_P(HostileServerTest, TrailersFollowTheBody) {
  serve([](ScriptPeer& peer) {
    peer.handshake();
    const std::vector<int32_t> ids = peer.requests(1);
    if (ids.size() != 1) return;
    peer.send(head(ids[0], 200, false, {{"content-type", "application/grpc"}}) +
              frame(NGHTTP2_DATA, 0, ids[0], "abc") +
              frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, ids[0],
                    literal("grpc-status", "0") + literal("grpc-message", "ok")));
    peer.drain();
  });
  connect(server_->address());
  const auto o = gets(1)[0];
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  std::lock_guard<std::mutex> lock(o->mu);
  EXPECT_EQ(o->status, 200);
  EXPECT_EQ(fieldOf(o->fields, "content-type"), "application/grpc");
  EXPECT_EQ(o->body, "abc");
  ASSERT_TRUE(o->trailers.has_value());
  EXPECT_EQ(fieldOf(*o->trailers, "grpc-status"), "0");
  EXPECT_EQ(fieldOf(*o->trailers, "grpc-message"), "ok");
  EXPECT_EQ(o->close->errorCode, 0u);
  EXPECT_EQ(o->closes, 1);
}

TEST_P(HostileServerTest, ResetMidBody) {
  serve([](ScriptPeer& peer) {
    peer.handshake();
    const std::vector<int32_t> ids = peer.requests(1);
    if (ids.size() != 1) return;
    peer.send(head(ids[0], 200, false) + frame(NGHTTP2_DATA, 0, ids[0], "part") +
              rstStream(ids[0], NGHTTP2_INTERNAL_ERROR));
    peer.drain();
  });
  connect(server_->address());
  const auto o = gets(1)[0];
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  std::lock_guard<std::mutex> lock(o->mu);
  EXPECT_EQ(o->body, "part");
  EXPECT_EQ(o->close->errorCode, static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));
  EXPECT_FALSE(o->close->refused);
  EXPECT_FALSE(o->trailers.has_value());
  EXPECT_EQ(o->closes, 1);
}

// GOAWAY naming the second of three streams: the third fails refused (safe to
// retry), the first two are answered; then the connection ends by itself.
TEST_P(HostileServerTest, GoAwayRefusesStreamsAboveItsLastId) {
  serve([](ScriptPeer& peer) {
    peer.handshake();
    const std::vector<int32_t> ids = peer.requests(3);
    if (ids.size() != 3) return;
    peer.send(goAway(ids[1], NGHTTP2_NO_ERROR) + head(ids[0], 200, true) + head(ids[1], 204, true));
    peer.drain();
  });
  connect(server_->address());
  const auto o = gets(3);
  for (const auto& each : o) ASSERT_TRUE(waitUntil([&] { return each->closed(); }));
  EXPECT_EQ(o[0]->closeValue().errorCode, 0u);
  EXPECT_EQ(o[1]->closeValue().errorCode, 0u);
  EXPECT_TRUE(o[2]->closeValue().refused);
  EXPECT_EQ(o[2]->closeValue().errorCode, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  {
    std::lock_guard<std::mutex> lock(o[1]->mu);
    EXPECT_EQ(o[1]->status, 204);
  }
  ASSERT_TRUE(waitState(State::kClosed));
  EXPECT_NE(closeReason().find("GOAWAY"), std::string::npos) << closeReason();
}

// The server goes mid-stream: every stream's close runs, once.
TEST_P(HostileServerTest, ConnectionDroppedMidStream) {
  serve([](ScriptPeer& peer) {
    peer.handshake();
    const std::vector<int32_t> ids = peer.requests(3);
    if (ids.size() != 3) return;
    peer.send(head(ids[0], 200, false) + frame(NGHTTP2_DATA, 0, ids[0], "half"));
    peer.shutdownWrite();  // gone after "half", with a FIN, not a reset
    peer.drain();
  });
  connect(server_->address());
  const auto o = gets(3);
  for (const auto& each : o) ASSERT_TRUE(waitUntil([&] { return each->closed(); }));
  ASSERT_TRUE(waitState(State::kClosed));
  for (const auto& each : o) {
    std::lock_guard<std::mutex> lock(each->mu);
    EXPECT_EQ(each->closes, 1);
    EXPECT_TRUE(each->close->connectionLost);
  }
  std::lock_guard<std::mutex> lock(o[0]->mu);
  EXPECT_EQ(o[0]->body, "half");
  EXPECT_EQ(closedCount(), 1);
}

TEST_P(HostileServerTest, UnacknowledgedPingClosesTheConnection) {
  serve([](ScriptPeer& peer) {
    peer.handshake();
    peer.drain();  // reads the PINGs, never acknowledges one
  });
  ClientConnection::Options options;
  options.keepaliveInterval = std::chrono::milliseconds(20);
  options.keepaliveTimeout = std::chrono::milliseconds(100);
  connect(server_->address(), options);
  ASSERT_TRUE(waitState(State::kConnected));
  ASSERT_TRUE(waitState(State::kClosed));
  EXPECT_NE(closeReason().find("keepalive PING not acknowledged"), std::string::npos)
      << closeReason();
}

TEST_P(HostileServerTest, SilentServerTimesOut) {
  serve([](ScriptPeer& peer) { peer.drain(); });
  ClientConnection::Options options;
  options.connectTimeout = std::chrono::milliseconds(200);
  connect(server_->address(), options);
  const auto o = gets(1)[0];
  ASSERT_TRUE(waitState(State::kClosed));
  EXPECT_NE(closeReason().find("timed out"), std::string::npos) << closeReason();
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  EXPECT_TRUE(o->closeValue().connectionLost);
}

TEST_P(HostileServerTest, GarbageEndsTheConnection) {
  serve([](ScriptPeer& peer) {
    peer.next();
    peer.send("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    peer.drain();
  });
  connect(server_->address());
  ASSERT_TRUE(waitState(State::kClosed));
  EXPECT_NE(closeReason().find("HTTP/2 error"), std::string::npos) << closeReason();
}

// A header list past maxHeaderListBytes fails its stream only; the next
// stream on the connection is answered.
TEST_P(HostileServerTest, OversizedHeadersResetTheStream) {
  serve([](ScriptPeer& peer) {
    peer.handshake();
    const std::vector<int32_t> ids = peer.requests(2);
    if (ids.size() != 2) return;
    peer.send(head(ids[0], 200, true, {{"x-big", std::string(6000, 'h')}}) +
              head(ids[1], 200, true));
    peer.drain();
  });
  ClientConnection::Options options;
  options.session.maxHeaderListBytes = 4096;
  connect(server_->address(), options);
  const auto o = gets(2);
  for (const auto& each : o) ASSERT_TRUE(waitUntil([&] { return each->closed(); }));
  EXPECT_EQ(o[0]->closeValue().errorCode, static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  {
    std::lock_guard<std::mutex> lock(o[0]->mu);
    EXPECT_EQ(o[0]->heads, 0);
  }
  EXPECT_EQ(o[1]->closeValue().errorCode, 0u);
  EXPECT_EQ(runSync(clientLoop_, [&] { return conn_->state(); }), State::kConnected);
}

// A small block that decodes huge (one field indexed, then referred to
// again and again): the connection ends, ENHANCE_YOUR_CALM.
TEST_P(HostileServerTest, HpackBombEndsTheConnection) {
  std::atomic<uint32_t>* code = &goAwayCode_;
  serve([code](ScriptPeer& peer) {
    peer.handshake();
    const std::vector<int32_t> ids = peer.requests(1);
    if (ids.size() != 1) return;
    std::string block = literal(":status", "200") + literalIndexed("x-b", std::string(3000, 'b'));
    for (int i = 0; i < 40; ++i) block += indexed(62);  // the newest dynamic entry
    peer.send(frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, ids[0], block));
    if (const auto c = peer.drain()) *code = *c;
  });
  ClientConnection::Options options;
  options.session.maxHeaderListBytes = 4096;
  connect(server_->address(), options);
  const auto o = gets(1)[0];
  ASSERT_TRUE(waitState(State::kClosed));
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  EXPECT_TRUE(o->closeValue().connectionLost);
  stopServer();
  EXPECT_EQ(goAwayCode_.load(), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

// A header block that never ends (CONTINUATION after CONTINUATION): the
// connection ends at maxHeaderBlockFrames, whatever the bytes.
TEST_P(HostileServerTest, ContinuationFloodEndsTheConnection) {
  std::atomic<uint32_t>* code = &goAwayCode_;
  serve([code](ScriptPeer& peer) {
    peer.handshake();
    const std::vector<int32_t> ids = peer.requests(1);
    if (ids.size() != 1) return;
    std::string flood = frame(NGHTTP2_HEADERS, 0, ids[0], literal(":status", "200"));
    for (int i = 0; i < 200; ++i)
      flood += frame(NGHTTP2_CONTINUATION, 0, ids[0], literal("a", "b"));
    peer.send(flood);
    if (const auto c = peer.drain()) *code = *c;
  });
  connect(server_->address());
  const auto o = gets(1)[0];
  ASSERT_TRUE(waitState(State::kClosed));
  EXPECT_NE(closeReason().find("HTTP/2 error"), std::string::npos) << closeReason();
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  EXPECT_TRUE(o->closeValue().connectionLost);
  stopServer();
  EXPECT_EQ(goAwayCode_.load(), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

// Floods of frames that each cost the client an answer.
TEST_P(HostileServerTest, SettingsFloodEndsTheConnection) {
  std::atomic<uint32_t>* code = &goAwayCode_;
  serve([code](ScriptPeer& peer) {
    peer.handshake();
    std::string flood;
    for (int i = 0; i < 500; ++i) flood += frame(NGHTTP2_SETTINGS, 0, 0, {});
    peer.send(flood);
    if (const auto c = peer.drain()) *code = *c;
  });
  ClientConnection::Options options;
  options.session.controlBurst = 100;
  connect(server_->address(), options);
  ASSERT_TRUE(waitState(State::kClosed));
  EXPECT_NE(closeReason().find("flood"), std::string::npos) << closeReason();
  stopServer();
  EXPECT_EQ(goAwayCode_.load(), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST_P(HostileServerTest, PingFloodEndsTheConnection) {
  std::atomic<uint32_t>* code = &goAwayCode_;
  serve([code](ScriptPeer& peer) {
    peer.handshake();
    std::string flood;
    for (int i = 0; i < 500; ++i) flood += frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
    peer.send(flood);
    if (const auto c = peer.drain()) *code = *c;
  });
  ClientConnection::Options options;
  options.session.controlBurst = 100;
  connect(server_->address(), options);
  ASSERT_TRUE(waitState(State::kClosed));
  EXPECT_NE(closeReason().find("flood"), std::string::npos) << closeReason();
  stopServer();
  EXPECT_EQ(goAwayCode_.load(), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

// DATA larger than the stream's window: the stream fails
// (FLOW_CONTROL_ERROR) and none of it is kept or handed over.
TEST_P(HostileServerTest, DataPastTheWindowFailsTheStream) {
  serve([](ScriptPeer& peer) {
    peer.handshake();
    const std::vector<int32_t> ids = peer.requests(1);
    if (ids.size() != 1) return;
    peer.send(head(ids[0], 200, false) + frame(NGHTTP2_DATA, 0, ids[0], std::string(2000, 'd')));
    peer.drain();
  });
  ClientConnection::Options options;
  options.session.streamWindow = 1000;
  connect(server_->address(), options);
  const auto o = gets(1)[0];
  ASSERT_TRUE(waitUntil([&] { return o->closed(); }));
  EXPECT_EQ(o->closeValue().errorCode, static_cast<uint32_t>(NGHTTP2_FLOW_CONTROL_ERROR));
  std::lock_guard<std::mutex> lock(o->mu);
  EXPECT_EQ(o->bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, HostileServerTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         libnet::test::pollerName);

}  // namespace
}  // namespace libnet::http2::test
