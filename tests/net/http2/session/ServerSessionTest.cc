// http2::ServerSession without sockets: a compliant nghttp2 client for the
// normal cases, hand-made frames for the hostile ones, and what the server
// produced read back frame by frame.
#include "net/http2/ServerSession.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/http/BodyBudget.h"
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

// gRPC clients (grpc-go) send a PING with every call: a busy connection
// must not run out of control tokens.
TEST_F(HostileTest, APingAfterEachRequestIsNotAFlood) {
  ServerSession server(config_, "test");
  ASSERT_TRUE(feed(server, {}));
  int32_t id = 1;
  for (int round = 0; round < 30; ++round) {
    std::string bytes;
    for (int i = 0; i < 50; ++i, id += 2) {
      bytes += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id,
                     test::getBlock("/call"));
      bytes += frame(NGHTTP2_PING, 0, 0, std::string(8, 'p'));
    }
    const bool ok = server.receive(bytes);
    ASSERT_EQ(test::goAwayCode(test::parseFrames(test::drain(server))), -1) << "round " << round;
    ASSERT_TRUE(ok) << "round " << round;
  }
  EXPECT_EQ(handled_, 1500);
}

TEST_F(HostileTest, PingsAfterOneRequestAreStillAFlood) {
  ServerSession server(config_, "test");
  std::string bytes = frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                            test::getBlock("/file"));
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

// --- Requests the server refuses, and request bodies under flow control ---

// The frames of the server's answer on one stream.
struct StreamFrames {
  int status = 0;
  bool headersEndStream = false;
  std::string body;
  bool dataEndStream = false;
  int64_t reset = -1;          // RST_STREAM error code
  uint32_t windowGranted = 0;  // WINDOW_UPDATE increments on the stream
};

// The :status of a HEADERS frame the server made: it sends the status as
// an indexed field of the static table (":status: 200" is index 8, 204 9,
// 206 10, 304 11, 400 12, 404 13, 500 14) or as a literal.
int statusOf(const std::string& block) {
  nghttp2_hd_inflater* inflater = nullptr;
  nghttp2_hd_inflate_new(&inflater);
  int status = 0;
  auto* in = reinterpret_cast<const uint8_t*>(block.data());
  size_t left = block.size();
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left, 1);
    if (n < 0) break;
    in += n;
    left -= static_cast<size_t>(n);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0 &&
        std::string_view(reinterpret_cast<const char*>(nv.name), nv.namelen) == ":status") {
      status = std::stoi(std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) break;
    if (n == 0 && left == 0) break;
  }
  nghttp2_hd_inflate_del(inflater);
  return status;
}

StreamFrames framesOf(const std::vector<test::Frame>& frames, int32_t stream) {
  StreamFrames out;
  for (const test::Frame& f : frames) {
    if (f.stream != stream) continue;
    if (f.type == NGHTTP2_HEADERS) {
      out.status = statusOf(f.payload);
      out.headersEndStream = (f.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    } else if (f.type == NGHTTP2_DATA) {
      out.body += f.payload;
      out.dataEndStream = out.dataEndStream || (f.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    } else if (f.type == NGHTTP2_RST_STREAM && f.payload.size() == 4) {
      out.reset = static_cast<uint8_t>(f.payload[3]);
    } else if (f.type == NGHTTP2_WINDOW_UPDATE && f.payload.size() == 4) {
      const auto* p = reinterpret_cast<const uint8_t*>(f.payload.data());
      out.windowGranted +=
          (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
    }
  }
  return out;
}

std::string postBlock(std::string_view method,
                      std::vector<std::pair<std::string, std::string>> extra = {}) {
  std::vector<std::pair<std::string, std::string>> fields = {{":method", std::string(method)},
                                                             {":scheme", "http"},
                                                             {":authority", "localhost"},
                                                             {":path", "/upload"}};
  for (auto& field : extra) fields.push_back(std::move(field));
  return test::headerBlock(fields);
}

std::string data(int32_t stream, size_t bytes, bool end = false) {
  std::string out;
  while (bytes > 0 || end) {
    const size_t n = std::min<size_t>(bytes, 16384);
    bytes -= n;
    const bool last = bytes == 0 && end;
    out += frame(NGHTTP2_DATA, last ? NGHTTP2_FLAG_END_STREAM : 0, stream, std::string(n, 'd'));
    if (bytes == 0) break;
  }
  return out;
}

TEST_F(HostileTest, CookieCrumbsCountAsOneField) {
  std::string cookie;
  config_.handler = [&cookie](const HttpRequest& request, HttpResponse* response) {
    cookie = std::string(request.header("cookie").value_or(""));
    response->setStatus(200);
  };
  ServerSession server(config_, "test");
  // 120 cookie fields, as a browser sends its cookies over HTTP/2 (RFC 9113
  // 8.2.3): one cookie line in HTTP/1.1, which the field count allows.
  std::vector<std::pair<std::string, std::string>> fields = {
      {":method", "GET"}, {":scheme", "http"}, {":authority", "localhost"}, {":path", "/"}};
  std::string expected;
  for (int i = 0; i < 120; ++i) {
    fields.emplace_back("cookie", "c" + std::to_string(i) + "=v");
    expected += (i == 0 ? "" : "; ") + fields.back().second;
  }
  EXPECT_TRUE(
      feed(server, frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                         test::headerBlock(fields))));
  EXPECT_EQ(framesOf(frames_, 1).status, 200);
  EXPECT_EQ(cookie, expected);
  // The crumbs still count in full against the header section's bytes.
  fields.emplace_back("cookie", std::string(9000, 'c'));
  EXPECT_TRUE(
      server.receive(frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 3,
                           test::headerBlock(fields))));
  EXPECT_EQ(framesOf(test::parseFrames(test::drain(server)), 3).status, 431);
}

TEST_F(HostileTest, ARefusedHeadHasNoBody) {
  ServerSession server(config_, "test");
  EXPECT_TRUE(
      feed(server, frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                         postBlock("HEAD", {{"x-big", std::string(9000, 'h')}}))));
  const StreamFrames head = framesOf(frames_, 1);
  EXPECT_EQ(head.status, 431);
  EXPECT_TRUE(head.headersEndStream);  // RFC 9110 9.3.2: the answer to a HEAD has no body
  EXPECT_EQ(head.body, "");
}

TEST_F(ServerSessionTest, AHostThatNamesAnotherAuthorityIsMalformed) {
  ServerSession server(config_, "test");
  Client client;
  const int32_t other = client.request("GET", "/a", {}, {{"host", "elsewhere.example"}});
  // The same authority, written otherwise (RFC 3986 6.2.3): case, default port.
  const int32_t same = client.request("GET", "/b", {}, {{"host", "LocalHost:80"}});
  const int32_t none = client.request("GET", "/c");
  ASSERT_TRUE(client.exchange(server));
  EXPECT_EQ(client.response(other).status, 400);
  EXPECT_EQ(client.response(same).status, 200);
  EXPECT_EQ(client.response(same).body, "/b HTTP/2 0 LocalHost:80");
  EXPECT_EQ(client.response(none).body, "/c HTTP/2 0 localhost");
  EXPECT_EQ(handled_, 2);
}

TEST_F(HostileTest, ADeclaredBodyOverTheLimitIs413AtOnceThenAReset) {
  ServerSession server(config_, "test");
  // Content-Length past limits.maxBodyBytes (64 KiB here), not a byte of
  // the body sent yet.
  EXPECT_TRUE(feed(server, frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                                 postBlock("POST", {{"content-length", "100000"}}))));
  const StreamFrames answer = framesOf(frames_, 1);
  EXPECT_EQ(answer.status, 413);
  EXPECT_TRUE(answer.dataEndStream);
  EXPECT_EQ(answer.reset, NGHTTP2_NO_ERROR);  // RFC 9113 8.1: stop sending, no error
  EXPECT_EQ(answer.windowGranted, 0U);
  EXPECT_EQ(handled_, 0);
  // What was in flight is dropped, and the connection goes on.
  EXPECT_TRUE(server.receive(
      data(1, 30000) + frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 3,
                             test::getBlock("/next"))));
  frames_ = test::parseFrames(test::drain(server));
  EXPECT_EQ(framesOf(frames_, 3).status, 200);
  EXPECT_EQ(framesOf(frames_, 1).windowGranted, 0U);
  EXPECT_EQ(server.bodyBytes(), 0U);
}

TEST_F(HostileTest, AnUndeclaredBodyPastTheLimitIs413AtTheFirstByteTooMany) {
  ServerSession server(config_, "test");
  // 64 KiB, the limit and the first window (once the client has taken the
  // server's SETTINGS): the server opens the window by one byte, so that a
  // body too large shows itself.
  EXPECT_TRUE(
      feed(server, frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, {}) +
                       frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, postBlock("POST")) +
                       data(1, 64 * 1024)));
  EXPECT_EQ(framesOf(frames_, 1).status, 0);  // not answered yet: it may end here
  EXPECT_EQ(framesOf(frames_, 1).windowGranted, 1U);
  EXPECT_TRUE(server.receive(data(1, 1)));
  frames_ = test::parseFrames(test::drain(server));
  const StreamFrames answer = framesOf(frames_, 1);
  EXPECT_EQ(answer.status, 413);
  EXPECT_EQ(answer.reset, NGHTTP2_NO_ERROR);
  EXPECT_EQ(answer.windowGranted, 0U);
  EXPECT_EQ(server.bodyBytes(), 0U);
  EXPECT_EQ(handled_, 0);
}

// Many uploads at once on one connection whose body pool is small: flow
// control slows the client, it is never refused, and the bodies held stay
// within the pool.
TEST_F(ServerSessionTest, MultiplexedUploadsAreSlowedNeverRefused) {
  config_.options.maxConcurrentStreams = 10;
  config_.options.initialWindowSize = 16 * 1024;
  const size_t pool = 10 * 16 * 1024 + config_.limits.maxBodyBytes;
  config_.options.maxConnectionBodyBytes = pool;
  ServerSession server(config_, "test");
  Client client;
  // The SETTINGS first: a client that opens 40 streams before it knows of
  // the limit of 10 has the extra ones refused (REFUSED_STREAM).
  ASSERT_TRUE(client.exchange(server));
  std::vector<std::pair<int32_t, size_t>> posts;
  for (int i = 0; i < 40; ++i) {
    const size_t size = config_.limits.maxBodyBytes - static_cast<size_t>(i) * 997;
    std::vector<std::pair<std::string, std::string>> extra;
    if (i % 2 == 0) extra.emplace_back("content-length", std::to_string(size));
    posts.emplace_back(client.request("POST", "/p", std::string(size, 'u'), extra), size);
  }
  size_t peak = 0;
  for (int round = 0; round < 5000; ++round) {
    if (!client.exchange(server, SIZE_MAX, 1)) break;
    peak = std::max(peak, server.bodyBytes());
    if (handled_ == 40) break;
  }
  EXPECT_EQ(handled_, 40);
  for (const auto& [id, size] : posts) {
    EXPECT_EQ(client.response(id).status, 200) << "stream " << id;
    EXPECT_EQ(client.response(id).body, "/p HTTP/2 " + std::to_string(size) + " localhost");
  }
  EXPECT_LE(peak, pool);
  EXPECT_GT(peak, 0U);
}

TEST_F(HostileTest, BodiesDrawOnTheServerWideBudgetAsHttp11Does) {
  auto budget = std::make_shared<http::BodyBudget>(100 * 1000);
  config_.bodyBudget = budget;
  ServerSession first(config_, "first");
  ServerSession second(config_, "second");
  // 60 KB declared on the first connection, half of it sent: reserved.
  EXPECT_TRUE(feed(first, frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                                postBlock("POST", {{"content-length", "60000"}})) +
                              data(1, 30000)));
  EXPECT_EQ(budget->used(), 60000U);
  // 60 KB more on another connection cannot fit the 100 KB: 503 at once,
  // before its body comes, and a reset.
  EXPECT_TRUE(feed(second, frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1,
                                 postBlock("POST", {{"content-length", "60000"}}))));
  const StreamFrames refused = framesOf(frames_, 1);
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.reset, NGHTTP2_NO_ERROR);
  EXPECT_EQ(budget->used(), 60000U);
  // The first finishes: answered, and its share given back.
  EXPECT_TRUE(first.receive(data(1, 30000, /*end=*/true)));
  EXPECT_EQ(framesOf(test::parseFrames(test::drain(first)), 1).status, 200);
  EXPECT_EQ(budget->used(), 0U);
  EXPECT_EQ(handled_, 1);
}

size_t openDescriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}

// A client that keeps its windows shut while asking for file after file:
// the connection holds at most Options::maxConnectionFiles of them open (16
// by default); the rest wait for their handler, and are answered once the
// client reads.
TEST_F(HostileTest, FilesHeldByAnswersAreBoundedPerConnection) {
  ServerSession server(config_, "test");
  const size_t before = openDescriptors();
  std::string requests;
  for (int32_t id = 1; id <= 39; id += 2) {
    requests += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id,
                      test::getBlock("/file"));
  }
  const std::string shut("\x00\x04\x00\x00\x00\x00", 6);  // INITIAL_WINDOW_SIZE 0
  EXPECT_TRUE(
      server.receive(std::string(test::kPreface) + frame(NGHTTP2_SETTINGS, 0, 0, shut) + requests));
  frames_ = test::parseFrames(test::drain(server));
  EXPECT_EQ(openDescriptors() - before, 16U);
  EXPECT_EQ(handled_, 16);
  // The windows open: every answer comes, whole, and every file is closed.
  const std::string open("\x00\x04\x00\x10\x00\x00", 6);  // 1 MiB
  EXPECT_TRUE(
      server.receive(frame(NGHTTP2_SETTINGS, 0, 0, open) +
                     frame(NGHTTP2_WINDOW_UPDATE, 0, 0, std::string("\x01\x00\x00\x00", 4))));
  frames_ = test::parseFrames(test::drain(server));
  EXPECT_EQ(handled_, 20);
  for (int32_t id = 1; id <= 39; id += 2) {
    EXPECT_TRUE(framesOf(frames_, id).body == file_.content()) << "stream " << id;
  }
  EXPECT_EQ(openDescriptors(), before);
}

// The same with answers held in memory (300 KB bodies): the connection holds
// at most Options::maxConnectionResponseBytes (1 MiB by default) of them, and
// the answer that passes it.
TEST_F(HostileTest, ResponseBodiesHeldAreBoundedPerConnection) {
  config_.handler = [this](const HttpRequest&, HttpResponse* response) {
    ++handled_;
    response->setBody(std::string(300 * 1000, 'm'));
  };
  ServerSession server(config_, "test");
  std::string requests;
  for (int32_t id = 1; id <= 19; id += 2) {
    requests += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id,
                      test::getBlock("/m"));
  }
  const std::string shut("\x00\x04\x00\x00\x00\x00", 6);  // INITIAL_WINDOW_SIZE 0
  EXPECT_TRUE(
      server.receive(std::string(test::kPreface) + frame(NGHTTP2_SETTINGS, 0, 0, shut) + requests));
  frames_ = test::parseFrames(test::drain(server));
  EXPECT_EQ(handled_, 4);  // 0, 300, 600, 900 KB held when each began
  const std::string open("\x00\x04\x00\x10\x00\x00", 6);  // 1 MiB
  EXPECT_TRUE(
      server.receive(frame(NGHTTP2_SETTINGS, 0, 0, open) +
                     frame(NGHTTP2_WINDOW_UPDATE, 0, 0, std::string("\x01\x00\x00\x00", 4))));
  frames_ = test::parseFrames(test::drain(server));
  EXPECT_EQ(handled_, 10);
  for (int32_t id = 1; id <= 19; id += 2) {
    EXPECT_EQ(framesOf(frames_, id).body.size(), 300U * 1000) << "stream " << id;
  }
}

TEST_F(HostileTest, FilesPastTheServerWideBoundAre503) {
  config_.fileBudget = std::make_shared<http::BodyBudget>(2);
  ServerSession server(config_, "test");
  const std::string shut("\x00\x04\x00\x00\x00\x00", 6);
  std::string requests;
  for (int32_t id = 1; id <= 5; id += 2) {
    requests += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id,
                      test::getBlock("/file"));
  }
  EXPECT_TRUE(
      server.receive(std::string(test::kPreface) + frame(NGHTTP2_SETTINGS, 0, 0, shut) + requests));
  frames_ = test::parseFrames(test::drain(server));
  EXPECT_EQ(framesOf(frames_, 1).status, 200);
  EXPECT_EQ(framesOf(frames_, 3).status, 200);
  EXPECT_EQ(framesOf(frames_, 5).status, 503);
  EXPECT_EQ(config_.fileBudget->used(), 2U);
}

}  // namespace
}  // namespace libnet::http2
