#include "net/http/HttpResponseParser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "net/Buffer.h"
#include "tests/net/http/Mutation.h"

namespace libnet::http {
namespace {

using Result = HttpResponseParser::Result;
using Error = HttpResponseParser::Error;

// Feeds `bytes` in one piece; what the parser leaves stays in `buf`.
Result feed(HttpResponseParser& parser, Buffer& buf, std::string_view bytes) {
  buf.append(bytes);
  return parser.parse(&buf);
}

// Feeds every split of `bytes` into two pieces, and byte by byte, and checks
// that each way gives the same result and body; returns that result.
Result feedEverySplit(std::string_view bytes, std::string* body, bool head = false) {
  HttpResponseParser whole;
  whole.start(head);
  Buffer buf;
  const Result expected = feed(whole, buf, bytes);
  *body = whole.body();
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    HttpResponseParser parser;
    parser.start(head);
    Buffer b;
    Result r = feed(parser, b, bytes.substr(0, cut));
    if (r == Result::kNeedMore) r = feed(parser, b, bytes.substr(cut));
    EXPECT_EQ(r, expected) << "split at " << cut;
    if (r == Result::kComplete) {
      EXPECT_EQ(parser.body(), *body) << "split at " << cut;
    }
  }
  HttpResponseParser bytewise;
  bytewise.start(head);
  Buffer b;
  Result r = Result::kNeedMore;
  for (size_t i = 0; i < bytes.size() && r == Result::kNeedMore; ++i) {
    r = feed(bytewise, b, bytes.substr(i, 1));
  }
  EXPECT_EQ(r, expected) << "byte by byte";
  if (r == Result::kComplete) {
    EXPECT_EQ(bytewise.body(), *body);
  }
  return expected;
}

TEST(HttpResponseParserTest, ContentLengthBody) {
  HttpResponseParser parser;
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(
      feed(parser, buf, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  b c \r\n\r\nhelloHTTP/1.1"),
      Result::kComplete);
  EXPECT_EQ(parser.status(), 200);
  EXPECT_EQ(parser.reason(), "OK");
  EXPECT_EQ(parser.versionMinor(), 1);
  EXPECT_EQ(parser.body(), "hello");
  EXPECT_EQ(parser.header("x-a"), "b c");
  EXPECT_EQ(parser.header("content-LENGTH"), "5");
  EXPECT_FALSE(parser.header("missing").has_value());
  EXPECT_TRUE(parser.keepAlive());
  // The next response's first bytes stay in the buffer.
  EXPECT_EQ(buf.readableBytes(), 8u);
  std::string body;
  EXPECT_EQ(feedEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", &body),
            Result::kComplete);
  EXPECT_EQ(body, "hello");
}

TEST(HttpResponseParserTest, ChunkedSplitAtEveryByte) {
  std::string body;
  const std::string response =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\nTrailer-A: x\r\n\r\n";
  EXPECT_EQ(feedEverySplit(response, &body), Result::kComplete);
  EXPECT_EQ(body, "hello world!");
  HttpResponseParser parser;
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(feed(parser, buf, response + "NEXT"), Result::kComplete);
  EXPECT_TRUE(parser.keepAlive());
  EXPECT_EQ(buf.retrieveAllAsString(), "NEXT");
  // Trailers are checked, not stored as headers.
  EXPECT_FALSE(parser.header("trailer-a").has_value());
}

TEST(HttpResponseParserTest, MalformedChunks) {
  std::string body;
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(feedEverySplit(head + "zz\r\n", &body), Result::kError);
  EXPECT_EQ(feedEverySplit(head + "3\r\nabcX\r\n", &body), Result::kError);
  EXPECT_EQ(feedEverySplit(head + "ffffffffffffffffffff\r\n", &body), Result::kError);
  EXPECT_EQ(feedEverySplit(head + std::string(5000, '0'), &body), Result::kError);
}

TEST(HttpResponseParserTest, NoBodyForHead1xx204And304) {
  for (const char* status : {"204 No Content", "304 Not Modified"}) {
    HttpResponseParser parser;
    parser.start(false);
    Buffer buf;
    const std::string response =
        std::string("HTTP/1.1 ") + status + "\r\nContent-Length: 10\r\n\r\n";
    ASSERT_EQ(feed(parser, buf, response + "HTTP/1.1 200 OK\r\n"), Result::kComplete) << status;
    EXPECT_EQ(parser.body(), "");
    EXPECT_TRUE(parser.keepAlive());
    EXPECT_EQ(buf.readableBytes(), 17u) << "the next response is left in the buffer";
  }
  HttpResponseParser parser;
  parser.start(true);
  Buffer buf;
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"),
            Result::kComplete);
  EXPECT_EQ(parser.header("content-length"), "1000");
  EXPECT_TRUE(parser.keepAlive());
  parser.start(true);
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Result::kComplete);
}

TEST(HttpResponseParserTest, InformationalStopsRightAfterItsHeaders) {
  HttpResponseParser parser;
  parser.start(false);
  Buffer buf;
  const std::string switching =
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
  ASSERT_EQ(feed(parser, buf, switching + "\x81\x02hi"), Result::kComplete);
  EXPECT_EQ(parser.status(), 101);
  EXPECT_TRUE(parser.informational());
  EXPECT_EQ(parser.header("upgrade"), "websocket");
  EXPECT_EQ(buf.retrieveAllAsString(), "\x81\x02hi");

  // 100 and 103 before the final answer: start() again after each.
  parser.start(false);
  ASSERT_EQ(feed(parser, buf,
                 "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"
                 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
            Result::kComplete);
  EXPECT_EQ(parser.status(), 100);
  parser.start(false);
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(parser.status(), 103);
  EXPECT_EQ(parser.header("link"), "</s.css>");
  parser.start(false);
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(parser.status(), 200);
  EXPECT_EQ(parser.body(), "ok");
  EXPECT_EQ(buf.readableBytes(), 0u);
}

// Parses `bytes` as one request's answer, going on after each interim
// response as the client does.
Result parseWithInterims(HttpResponseParser& parser, Buffer& buf, std::string_view bytes) {
  buf.append(bytes);
  Result r = parser.parse(&buf);
  while (r == Result::kComplete && parser.informational()) {
    parser.continueAfterInterim();
    r = parser.parse(&buf);
  }
  return r;
}

TEST(HttpResponseParserTest, InterimResponsesAreBoundedInNumberAndBytes) {
  const std::string hundred = "HTTP/1.1 100 Continue\r\n\r\n";
  const std::string final = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  std::string atLimit;
  for (int i = 0; i < 32; ++i) atLimit += hundred;
  HttpResponseParser parser;
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(parseWithInterims(parser, buf, atLimit + final), Result::kComplete);
  EXPECT_EQ(parser.status(), 200);
  EXPECT_EQ(parser.body(), "ok");
  // A new request counts from zero; one past the limit is refused.
  parser.start(false);
  ASSERT_EQ(parseWithInterims(parser, buf, atLimit + hundred + final), Result::kError);
  EXPECT_EQ(parser.error(), Error::kTooLarge);
  EXPECT_NE(parser.errorMessage().find("too many interim (1xx) responses (limit 32)"),
            std::string_view::npos)
      << parser.errorMessage();
  // Their bytes in all: three 103s of about 400 bytes against 1000.
  HttpResponseParser::Limits limits;
  limits.maxInterimBytes = 1000;
  HttpResponseParser small(limits);
  small.start(false);
  buf.retrieveAll();
  const std::string hints =
      "HTTP/1.1 103 Early Hints\r\nLink: </" + std::string(360, 'a') + ">\r\n\r\n";
  ASSERT_EQ(parseWithInterims(small, buf, hints + hints), Result::kNeedMore);
  ASSERT_EQ(parseWithInterims(small, buf, hints), Result::kError);
  EXPECT_EQ(small.error(), Error::kTooLarge);
  EXPECT_NE(small.errorMessage().find("1000 bytes in all"), std::string_view::npos)
      << small.errorMessage();
  // 101 is not interim: a WebSocket handshake parses it with any limit.
  HttpResponseParser::Limits none;
  none.maxInterimResponses = 0;
  HttpResponseParser upgrade(none);
  upgrade.start(false);
  buf.retrieveAll();
  EXPECT_EQ(feed(upgrade, buf, "HTTP/1.1 101 Switching Protocols\r\n\r\n"), Result::kComplete);
}

TEST(HttpResponseParserTest, ConnectionEndingAfterAnInterimResponseIsTruncated) {
  HttpResponseParser parser;
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(parseWithInterims(parser, buf, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"),
            Result::kNeedMore);
  EXPECT_TRUE(parser.started()) << "an interim response is a byte of the answer";
  ASSERT_EQ(parser.finish(), Result::kError);
  EXPECT_EQ(parser.error(), Error::kTruncated);
  EXPECT_NE(parser.errorMessage().find("after 1 interim (1xx) response"), std::string_view::npos)
      << parser.errorMessage();
}

TEST(HttpResponseParserTest, CloseDelimitedBodyCompletesAtEofOnly) {
  HttpResponseParser parser;
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\n\r\nsome"), Result::kNeedMore);
  ASSERT_EQ(feed(parser, buf, " bytes"), Result::kNeedMore);
  EXPECT_TRUE(parser.closeDelimited());
  ASSERT_EQ(parser.finish(), Result::kComplete);
  EXPECT_EQ(parser.body(), "some bytes");
  EXPECT_FALSE(parser.keepAlive());
}

// RFC 9112 6.1: a body under a transfer coding the client does not decode
// is not the representation, and is never handed over as if it were.
TEST(HttpResponseParserTest, TransferCodingsOtherThanChunkedAreRefused) {
  std::string body;
  for (const char* codings :
       {"Transfer-Encoding: gzip\r\n", "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: chunked, gzip\r\n", "Transfer-Encoding: chunked, chunked\r\n",
        "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: identity\r\n", "Transfer-Encoding: \r\n"}) {
    const std::string response =
        std::string("HTTP/1.1 200 OK\r\n") + codings + "\r\n5\r\nhello\r\n0\r\n\r\n";
    EXPECT_EQ(feedEverySplit(response, &body), Result::kError) << codings;
    for (auto mode :
         {HttpResponseParser::BodyMode::kStream, HttpResponseParser::BodyMode::kDiscard}) {
      HttpResponseParser parser;
      std::string streamed;
      parser.setBodyMode(mode);
      parser.setBodySink([&](std::string_view piece) { streamed.append(piece); });
      parser.start(false);
      Buffer buf;
      ASSERT_EQ(feed(parser, buf, response), Result::kError) << codings;
      EXPECT_EQ(parser.error(), Error::kMalformed);
      EXPECT_NE(parser.errorMessage().find("unsupported transfer coding"), std::string_view::npos)
          << parser.errorMessage();
      EXPECT_EQ(streamed, "") << codings;
      EXPECT_EQ(parser.bodyBytes(), 0u) << codings;
    }
  }
  EXPECT_EQ(
      feedEverySplit("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                     &body),
      Result::kComplete);
  EXPECT_EQ(body, "hello");
  // No body to decode: the answer to a HEAD, a 304.
  EXPECT_EQ(feedEverySplit("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", &body, true),
            Result::kComplete);
  EXPECT_EQ(feedEverySplit("HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: gzip\r\n\r\n", &body),
            Result::kComplete);
}

TEST(HttpResponseParserTest, LyingContentLengthIsAnErrorAtEof) {
  HttpResponseParser parser;
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"),
            Result::kNeedMore);
  ASSERT_EQ(parser.finish(), Result::kError);
  EXPECT_EQ(parser.error(), Error::kTruncated);
  EXPECT_NE(parser.errorMessage().find("5 of 100"), std::string_view::npos)
      << parser.errorMessage();
  // Chunked without its last chunk, and a header section cut short.
  parser.start(false);
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n"),
            Result::kNeedMore);
  EXPECT_EQ(parser.finish(), Result::kError);
  EXPECT_EQ(parser.error(), Error::kTruncated);
  parser.start(false);
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nContent-Le"), Result::kNeedMore);
  EXPECT_EQ(parser.finish(), Result::kError);
  EXPECT_EQ(parser.error(), Error::kTruncated);
  // Nothing at all: an error of its own (the client's retry rule needs it).
  parser.start(false);
  buf.retrieveAll();
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_FALSE(parser.started());
  EXPECT_EQ(parser.finish(), Result::kError);
  EXPECT_EQ(parser.error(), Error::kNoResponse);
}

// A Content-Length or chunk size of 2^64 or more (RFC 9112 7.1) in every
// body mode: refused as soon as it is read, nothing handed over as body;
// the largest value that fits, and any number of leading zeros, are fine.
struct ModeRun {
  Result result;
  Error error;
  std::string message;
  std::string body;  // stored or streamed
};

ModeRun runInMode(HttpResponseParser::BodyMode mode, const std::string& response) {
  HttpResponseParser parser;
  std::string streamed;
  parser.setBodyMode(mode);
  parser.setBodySink([&](std::string_view piece) { streamed.append(piece); });
  parser.start(false);
  Buffer buf;
  const Result r = feed(parser, buf, response);
  return {r, parser.error(), std::string(parser.errorMessage()), streamed + parser.body()};
}

TEST(HttpResponseParserTest, LengthsOf2To64OrMoreAreRefusedInEveryMode) {
  using Mode = HttpResponseParser::BodyMode;
  const std::string hello = "hello\r\n0\r\n\r\n";
  std::vector<std::string> overflowing;
  for (const char* length : {"18446744073709551616", "184467440737095516150",
                             "99999999999999999999999", "00018446744073709551616"}) {
    overflowing.push_back(std::string("HTTP/1.1 200 OK\r\nContent-Length: ") + length + "\r\n\r\n" +
                          hello);
  }
  for (const char* size : {"10000000000000000", "fffffffffffffffff", "10000000000000000;a=b",
                           "000ffffffffffffffff0"}) {
    overflowing.push_back(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") +
                          size + "\r\n" + hello);
  }
  for (const std::string& response : overflowing) {
    for (Mode mode : {Mode::kStore, Mode::kStream, Mode::kDiscard}) {
      const ModeRun run = runInMode(mode, response);
      EXPECT_EQ(run.result, Result::kError) << response;
      EXPECT_EQ(run.error, Error::kMalformed) << response;
      EXPECT_NE(run.message.find("2^64 or more"), std::string::npos) << run.message;
      EXPECT_EQ(run.body, "") << response;
    }
  }
  // 2^64 - 1 fits: stored, past the memory limit; streamed, a body that
  // has only begun.
  for (const std::string framing :
       {"Content-Length: 18446744073709551615\r\n\r\nhello",
        "Transfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nhello"}) {
    const std::string response = "HTTP/1.1 200 OK\r\n" + framing;
    EXPECT_EQ(runInMode(Mode::kStore, response).error, Error::kTooLarge) << framing;
    const ModeRun streamed = runInMode(Mode::kStream, response);
    EXPECT_EQ(streamed.result, Result::kNeedMore) << framing;
    EXPECT_EQ(streamed.body, "hello");
  }
  for (const std::string framing :
       {"Content-Length: 0000000000000000000000005\r\n\r\nhello",
        "Transfer-Encoding: chunked\r\n\r\n00000000000000005\r\nhello\r\n0\r\n\r\n"}) {
    for (Mode mode : {Mode::kStore, Mode::kStream}) {
      const ModeRun run = runInMode(mode, "HTTP/1.1 200 OK\r\n" + framing);
      EXPECT_EQ(run.result, Result::kComplete) << framing;
      EXPECT_EQ(run.body, "hello");
    }
  }
}

TEST(HttpResponseParserTest, ContentLengthConflictsAreErrors) {
  std::string body;
  EXPECT_EQ(feedEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                           &body),
            Result::kError);
  EXPECT_EQ(feedEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd", &body),
            Result::kError);
  EXPECT_EQ(feedEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc", &body),
            Result::kComplete);
  EXPECT_EQ(feedEverySplit("HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", &body), Result::kError);
  EXPECT_EQ(
      feedEverySplit("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                     &body),
      Result::kError);
  EXPECT_EQ(feedEverySplit("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &body),
            Result::kError);
}

TEST(HttpResponseParserTest, MalformedStatusLines) {
  std::string body;
  for (const char* bad :
       {"HTTP/1.1 20 OK\r\n\r\n", "HTTP/2.0 200 OK\r\n\r\n", "ICY 200 OK\r\n\r\n",
        "HTTP/1.1 200OK\r\n\r\n", "HTTP/1.1 099 X\r\n\r\n", "HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", "HTTP/1.1 200 OK\r\nBad\x01: x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nA: \x7f\r\n\r\n"}) {
    EXPECT_EQ(feedEverySplit(bad, &body), Result::kError) << bad;
  }
  EXPECT_EQ(feedEverySplit("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", &body), Result::kComplete);
}

TEST(HttpResponseParserTest, TenThousandHeadersAreAnError) {
  std::string response = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 10000; ++i) response += "X-" + std::to_string(i) + ": v\r\n";
  response += "Content-Length: 0\r\n\r\n";
  HttpResponseParser parser;
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(feed(parser, buf, response), Result::kError);
  EXPECT_EQ(parser.error(), Error::kTooLarge);
  EXPECT_NE(parser.errorMessage().find("too many header fields"), std::string_view::npos);
  EXPECT_LE(parser.headerCount(), parser.limits().maxHeaderCount);
  // Byte limits too: one huge field, and an endless status line.
  HttpResponseParser::Limits limits;
  limits.maxHeaderBytes = 1024;
  HttpResponseParser small(limits);
  small.start(false);
  Buffer b;
  ASSERT_EQ(feed(small, b, "HTTP/1.1 200 OK\r\nX: " + std::string(2000, 'a')), Result::kError);
  EXPECT_EQ(small.error(), Error::kTooLarge);
  small.start(false);
  b.retrieveAll();
  ASSERT_EQ(feed(small, b, "HTTP/1.1 200 " + std::string(9000, 'a')), Result::kError);
  EXPECT_NE(small.errorMessage().find("status line"), std::string_view::npos);
}

TEST(HttpResponseParserTest, StoredBodyIsBounded) {
  HttpResponseParser::Limits limits;
  limits.maxBodyBytes = 100;
  HttpResponseParser parser(limits);
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n"), Result::kError);
  EXPECT_EQ(parser.error(), Error::kTooLarge);
  parser.start(false);
  buf.retrieveAll();
  // An endless chunked body: refused once the chunks pass the limit.
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Result::kNeedMore);
  Result r = Result::kNeedMore;
  for (int i = 0; i < 100 && r == Result::kNeedMore; ++i) {
    r = feed(parser, buf, "a\r\n0123456789\r\n");
  }
  EXPECT_EQ(r, Result::kError);
  EXPECT_EQ(parser.error(), Error::kTooLarge);
  EXPECT_LE(parser.body().size(), 100u);
  // Close-delimited too.
  parser.start(false);
  buf.retrieveAll();
  EXPECT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\n\r\n" + std::string(101, 'x')), Result::kError);
}

TEST(HttpResponseParserTest, StreamedAndDiscardedBodies) {
  HttpResponseParser::Limits limits;
  limits.maxBodyBytes = 4;  // applies to stored bodies only
  HttpResponseParser parser(limits);
  std::string streamed;
  int pieces = 0;
  parser.setBodyMode(HttpResponseParser::BodyMode::kStream);
  parser.setBodySink([&](std::string_view piece) {
    streamed.append(piece);
    ++pieces;
  });
  parser.start(false);
  Buffer buf;
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"),
            Result::kNeedMore);
  ASSERT_EQ(feed(parser, buf, "4\r\ndefg\r\n0\r\n\r\n"), Result::kComplete);
  EXPECT_EQ(streamed, "abcdefg");
  EXPECT_EQ(pieces, 2);
  EXPECT_EQ(parser.body(), "");
  EXPECT_EQ(parser.bodyBytes(), 7u);
  parser.setBodyMode(HttpResponseParser::BodyMode::kDiscard);
  parser.start(false);
  ASSERT_EQ(feed(parser, buf, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789"),
            Result::kComplete);
  EXPECT_EQ(parser.body(), "");
  EXPECT_EQ(parser.bodyBytes(), 10u);
}

TEST(HttpResponseParserTest, ConnectionReuse) {
  struct Case {
    const char* response;
    bool keepAlive;
  };
  for (const Case& c :
       {Case{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
        Case{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false},
        Case{"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n"
             "Content-Length: 0\r\n\r\n",
             false},
        Case{"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
        Case{"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", false}}) {
    HttpResponseParser parser;
    parser.start(false);
    Buffer buf;
    ASSERT_EQ(feed(parser, buf, c.response), Result::kComplete) << c.response;
    EXPECT_EQ(parser.keepAlive(), c.keepAlive) << c.response;
  }
}

TEST(HttpResponseParserTest, SteadyStateKeepsItsStorage) {
  HttpResponseParser parser;
  parser.setBodyMode(HttpResponseParser::BodyMode::kDiscard);
  Buffer buf;
  const std::string response =
      "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Fri, 27 Nov 2026 10:00:00 GMT\r\n"
      "Content-Type: text/plain\r\nContent-Length: 12\r\n\r\nhello world\n";
  parser.start(false);
  ASSERT_EQ(feed(parser, buf, response), Result::kComplete);
  const std::string_view first = parser.headerName(0);
  for (int i = 0; i < 100; ++i) {
    parser.start(false);
    ASSERT_EQ(feed(parser, buf, response), Result::kComplete);
  }
  // The same storage is reused: the views land at the same address.
  EXPECT_EQ(parser.headerName(0).data(), first.data());
  EXPECT_EQ(parser.header("server"), "nginx");
}

// Mutated responses (bytes flipped, inserted, dropped, cut): whatever the
// verdict, it is the same whole, split in two, or byte by byte
// (feedEverySplit checks that), and nothing crashes or hangs.
TEST(HttpResponseParserTest, MutatedResponsesGetOneVerdictHoweverSplit) {
  const std::vector<std::string> seeds = {
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n",
      "HTTP/1.1 103 Early Hints\r\nLink: <a>\r\n\r\n",
      "HTTP/1.0 204 No Content\r\nConnection: close\r\n\r\n",
  };
  const std::string alphabet = "\r\n :;0123456789aAfFxX\t\x7f\x80";
  std::mt19937 random(7);
  int complete = 0;
  int errors = 0;
  for (int i = 0; i < 300; ++i) {
    const std::string input =
        test::mutated(seeds[random() % seeds.size()], alphabet, /*cut=*/true, random);
    std::string body;
    const Result r = feedEverySplit(input, &body, random() % 8 == 0);
    complete += r == Result::kComplete ? 1 : 0;
    errors += r == Result::kError ? 1 : 0;
  }
  // Both verdicts occur: the mutations are neither all harmless nor all fatal.
  EXPECT_GT(complete, 0);
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace libnet::http
