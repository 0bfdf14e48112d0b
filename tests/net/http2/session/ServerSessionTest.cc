// http2::ServerSession without sockets: a compliant nghttp2 client for the
// normal cases, hand-made frames for the hostile ones, and what the server
// produced read back frame by frame.
#include "net/http2/ServerSession.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "tests/net/http2/session/H2Peer.h"

namespace libnet::http2 {
namespace {

using http::HttpRequest;
using http::HttpResponse;
using test::Client;
using test::frame;

constexpr size_t kFileSize = 300 * 1000;

// A file of kFileSize patterned bytes, removed at the end.
class PatternFile {
 public:
  PatternFile() {
    char name[] = "/tmp/h2-session-XXXXXX";
    fd_.reset(::mkstemp(name));
    path_ = name;
    for (size_t i = 0; i < kFileSize; ++i) content_.push_back(static_cast<char>('a' + i % 23));
    EXPECT_EQ(::write(fd_.get(), content_.data(), content_.size()),
              static_cast<ssize_t>(content_.size()));
  }
  ~PatternFile() { ::unlink(path_.c_str()); }
  [[nodiscard]] const std::string& content() const { return content_; }
  [[nodiscard]] UniqueFd open() const { return UniqueFd(::open(path_.c_str(), O_RDONLY)); }

 private:
  UniqueFd fd_;
  std::string path_;
  std::string content_;
};

class ServerSessionTest : public ::testing::Test {
 protected:
  ServerSessionTest() {
    config_.limits.maxHeaderBytes = 8 * 1024;
    config_.limits.maxBodyBytes = 64 * 1024;
    config_.handler = [this](const HttpRequest& request, HttpResponse* response) {
      ++handled_;
      if (request.path() == "/throw") throw 42;
      if (request.path() == "/file") {
        response->setFile(file_.open(), kFileSize);
        return;
      }
      response->setContentType("text/plain");
      response->addHeader("X-Method", request.methodName());
      response->addHeader("Connection", "keep-alive");  // must not reach HTTP/2
      response->setBody(std::string(request.path()) + " " +
                        std::string(http::versionName(request.version())) + " " +
                        std::to_string(request.body().size()) + " " +
                        std::string(request.header("host").value_or("-")));
    };
  }

  ServerSession::Config config_;
  PatternFile file_;
  int handled_ = 0;
};

TEST_F(ServerSessionTest, AnswersWithTheHandler) {
  ServerSession server(config_, "test");
  Client client;
  const int32_t get = client.request("GET", "/a?q=1");
  const int32_t head = client.request("HEAD", "/b");
  const int32_t post = client.request("POST", "/c", std::string(5000, 'x'));
  ASSERT_TRUE(client.exchange(server));
  EXPECT_EQ(client.response(get).status, 200);
  EXPECT_EQ(client.response(get).body, "/a HTTP/2 0 localhost");
  EXPECT_EQ(client.response(get).fields.at("content-type"), "text/plain");
  EXPECT_EQ(client.response(get).fields.at("x-method"), "GET");
  EXPECT_EQ(client.response(get).fields.count("connection"), 0U);
  EXPECT_EQ(client.response(get).fields.at("content-length"), "21");
  EXPECT_EQ(client.response(get).fields.count("date"), 1U);
  EXPECT_EQ(client.response(head).status, 200);
  EXPECT_EQ(client.response(head).body, "");
  EXPECT_EQ(client.response(head).fields.at("content-length"), "21");
  EXPECT_EQ(client.response(post).body, "/c HTTP/2 5000 localhost");
  EXPECT_EQ(server.pendingResponses(), 0U);
  EXPECT_FALSE(server.awaitingHeaders());
}

TEST_F(ServerSessionTest, AFileLargerThanAFrameComesWhole) {
  ServerSession server(config_, "test");
  Client client;
  const int32_t id = client.request("GET", "/file");
  ASSERT_TRUE(client.exchange(server));
  EXPECT_EQ(client.response(id).status, 200);
  EXPECT_EQ(client.response(id).body, file_.content());
}

TEST_F(ServerSessionTest, OutputStaysNearItsBudgetAndResumes) {
  ServerSession server(config_, "test");
  Client client;
  const int32_t id = client.request("GET", "/file");
  // Each produce() may pass its budget by at most one frame.
  ASSERT_TRUE(client.exchange(server, 1000, 100000));
  EXPECT_EQ(client.response(id).body, file_.content());
  Client second;
  const int32_t again = second.request("GET", "/file");
  Buffer out;
  second.exchange(server, 0, 1);  // nothing moves with no budget
  EXPECT_EQ(second.response(again).status, 0);
}

TEST_F(ServerSessionTest, AThrowingHandlerCostsItsStreamA500Only) {
  ServerSession server(config_, "test");
  Client client;
  const int32_t bad = client.request("GET", "/throw");
  const int32_t good = client.request("GET", "/ok");
  ASSERT_TRUE(client.exchange(server));
  EXPECT_EQ(client.response(bad).status, 500);
  EXPECT_EQ(client.response(good).status, 200);
  EXPECT_EQ(client.response(good).body, "/ok HTTP/2 0 localhost");
}

TEST_F(ServerSessionTest, LimitsAnswerTheirStatusAndTheConnectionGoesOn) {
  ServerSession server(config_, "test");
  Client client;
  const int32_t bigHeader = client.request("GET", "/h", {}, {{"x-big", std::string(9000, 'h')}});
  const int32_t bigBody = client.request("POST", "/b", std::string(70 * 1024, 'b'));
  const int32_t unknown = client.request("BREW", "/pot");
  const int32_t good = client.request("GET", "/after");
  ASSERT_TRUE(client.exchange(server));
  EXPECT_EQ(client.response(bigHeader).status, 431);
  EXPECT_EQ(client.response(bigBody).status, 413);
  EXPECT_EQ(client.response(unknown).status, 501);
  EXPECT_EQ(client.response(good).status, 200);
  EXPECT_EQ(handled_, 1);
}

TEST_F(ServerSessionTest, AClosedWindowStallsTheAnswerAndCountsItPending) {
  ServerSession server(config_, "test");
  Client client({{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}});
  const int32_t id = client.request("GET", "/file");
  ASSERT_TRUE(client.exchange(server));
  EXPECT_EQ(client.response(id).status, 200);
  EXPECT_EQ(client.response(id).body, "");
  EXPECT_EQ(server.pendingResponses(), 1U);
  EXPECT_EQ(server.responseBytes(), 0U);
}

TEST_F(ServerSessionTest, GoAwayLetsStreamsInFlightFinish) {
  ServerSession server(config_, "test");
  Client client;
  const int32_t id = client.request("GET", "/file");
  // The request is in, its answer not yet out.
  ASSERT_TRUE(client.exchange(server, 0, 1));
  server.goAway();
  ASSERT_TRUE(client.exchange(server));
  EXPECT_TRUE(client.goAwayReceived());
  EXPECT_EQ(client.goAwayLastStream(), id);
  EXPECT_EQ(client.response(id).body, file_.content());
  EXPECT_TRUE(server.finished());
}

TEST_F(ServerSessionTest, AStreamOpenedBeforeTheGoAwayIsOutIsNotServed) {
  ServerSession server(config_, "test");
  EXPECT_TRUE(server.receive(test::prefaceAndSettings()));
  server.goAway();  // queued, not yet produced
  EXPECT_TRUE(
      server.receive(frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                           test::getBlock("/late"))));
  const std::vector<test::Frame> frames = test::parseFrames(test::drain(server));
  // The GOAWAY says no stream was processed (last stream 0): the client may
  // retry stream 1, so it must not have run, nor be answered.
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(test::goAwayCode(frames), NGHTTP2_NO_ERROR);
  for (const test::Frame& f : frames) {
    if (f.type == NGHTTP2_GOAWAY) {
      EXPECT_EQ(f.payload.substr(0, 4), std::string(4, '\0'));
    }
    EXPECT_NE(f.type, NGHTTP2_HEADERS);
  }
}

// Hostile peers: what the server answers, read from its frames.
class HostileTest : public ServerSessionTest {
 protected:
  // Feeds `bytes` after the preface; returns what receive() said and
  // leaves the server's frames in frames_.
  bool feed(ServerSession& server, const std::string& bytes) {
    const bool ok = server.receive(test::prefaceAndSettings() + bytes);
    frames_ = test::parseFrames(test::drain(server));
    return ok;
  }
  std::vector<test::Frame> frames_;
};

TEST_F(HostileTest, RapidResetIsAGoAway) {
  ServerSession server(config_, "test");
  std::string bytes;
  for (int32_t id = 1; id < 2 * 400; id += 2) {
    bytes += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id, test::getBlock("/"));
    bytes += frame(NGHTTP2_RST_STREAM, 0, id, std::string("\0\0\0\x08", 4));
  }
  EXPECT_FALSE(feed(server, bytes));
  EXPECT_EQ(test::goAwayCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_LT(handled_, 400);
}

TEST_F(HostileTest, PingFloodIsAGoAway) {
  ServerSession server(config_, "test");
  std::string bytes;
  for (int i = 0; i < 1500; ++i) bytes += frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
  EXPECT_FALSE(feed(server, bytes));
  EXPECT_EQ(test::goAwayCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
}

TEST_F(HostileTest, SettingsFloodIsAGoAway) {
  ServerSession server(config_, "test");
  std::string bytes;
  for (int i = 0; i < 1500; ++i) bytes += frame(NGHTTP2_SETTINGS, 0, 0, {});
  EXPECT_FALSE(feed(server, bytes));
  EXPECT_EQ(test::goAwayCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
}

TEST_F(HostileTest, ContinuationFloodIsBoundedInFrames) {
  ServerSession server(config_, "test");
  const std::string block = test::getBlock("/");
  std::string bytes = frame(NGHTTP2_HEADERS, 0, 1, block.substr(0, 1));
  for (int i = 0; i < 100; ++i) bytes += frame(NGHTTP2_CONTINUATION, 0, 1, {});
  EXPECT_FALSE(feed(server, bytes));
  EXPECT_NE(test::goAwayCode(frames_), -1);
  EXPECT_EQ(handled_, 0);
}

TEST_F(HostileTest, AnOpenHeaderBlockKeepsTheHeaderDeadlineRunning) {
  ServerSession server(config_, "test");
  EXPECT_TRUE(server.awaitingHeaders());  // no preface yet
  const std::string block = test::getBlock("/");
  EXPECT_TRUE(feed(server, frame(NGHTTP2_HEADERS, 0, 1, block.substr(0, 2))));
  EXPECT_TRUE(server.awaitingHeaders());
  EXPECT_TRUE(
      server.receive(frame(NGHTTP2_CONTINUATION, NGHTTP2_FLAG_END_HEADERS, 1, block.substr(2))));
  EXPECT_FALSE(server.awaitingHeaders());
}

TEST_F(HostileTest, HpackBombIsAGoAway) {
  ServerSession server(config_, "test");
  // One 3000-byte field enters the table (nghttp2's encoder indexes fields
  // up to 3/4 of it); then each 1-byte reference to it decodes to 3 KB: 100
  // of them are 300 KB from a block of about 3 KB.
  nghttp2_hd_deflater* deflater = nullptr;
  ASSERT_EQ(nghttp2_hd_deflate_new(&deflater, 4096), 0);
  std::vector<std::pair<std::string, std::string>> fields = {
      {":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/"}};
  for (int i = 0; i < 100; ++i) fields.emplace_back("x-bomb", std::string(3000, 'b'));
  const std::string block = test::headerBlock(fields, deflater);
  nghttp2_hd_deflate_del(deflater);
  EXPECT_LT(block.size(), 3000U + 200);
  EXPECT_FALSE(feed(server, frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, block)));
  EXPECT_EQ(test::goAwayCode(frames_), NGHTTP2_ENHANCE_YOUR_CALM);
  EXPECT_EQ(handled_, 0);
}

TEST_F(HostileTest, ABadPrefaceIsRefused) {
  ServerSession server(config_, "test");
  EXPECT_FALSE(server.receive("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_FALSE(server.receive(test::prefaceAndSettings()));  // and stays refused
}

TEST_F(HostileTest, ATableSizeUpdateOverTheLimitIsACompressionError) {
  ServerSession server(config_, "test");
  // A dynamic table size update (001xxxxx) to 8192, above the 4096 allowed.
  const std::string block = std::string("\x3f\xe1\x3f", 3) + test::getBlock("/");
  // A connection error nghttp2 handles itself: receive() takes the bytes,
  // the GOAWAY is queued, and the session is finished once it is out.
  feed(server,
       frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1, block));
  EXPECT_EQ(test::goAwayCode(frames_), NGHTTP2_COMPRESSION_ERROR);
  EXPECT_TRUE(server.finished());
  EXPECT_EQ(handled_, 0);
}

// Five streams opened and left open against a limit of three.
std::string fiveOpenStreams() {
  std::string bytes;
  for (int32_t id = 1; id <= 9; id += 2) {
    bytes += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id, test::getBlock("/"));
  }
  return bytes;
}

TEST_F(HostileTest, StreamsPastTheConcurrencyLimitAreRefused) {
  config_.options.maxConcurrentStreams = 3;
  ServerSession server(config_, "test");
  // Before the client has acknowledged the limit: the extra streams are
  // refused one by one (REFUSED_STREAM: the client may retry them).
  EXPECT_TRUE(feed(server, fiveOpenStreams()));
  int refused = 0;
  for (const test::Frame& f : frames_) {
    if (f.type != NGHTTP2_RST_STREAM) continue;
    ++refused;
    EXPECT_GE(f.stream, 7);
    EXPECT_EQ(f.payload, std::string("\0\0\0\x07", 4));  // REFUSED_STREAM
  }
  EXPECT_EQ(refused, 2);
  EXPECT_EQ(test::goAwayCode(frames_), -1);
}

TEST_F(HostileTest, StreamsPastAnAcknowledgedLimitEndTheConnection) {
  config_.options.maxConcurrentStreams = 3;
  ServerSession server(config_, "test");
  EXPECT_TRUE(feed(server, ""));  // the server's SETTINGS are out
  static_cast<void>(
      server.receive(frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, {}) + fiveOpenStreams()));
  frames_ = test::parseFrames(test::drain(server));
  EXPECT_EQ(test::goAwayCode(frames_), NGHTTP2_PROTOCOL_ERROR);
  EXPECT_TRUE(server.finished());
}

}  // namespace
}  // namespace libnet::http2
