#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/Buffer.h"
#include "net/http/HttpParser.h"
#include "net/http/HttpRequest.h"
#include "tests/net/http/Mutation.h"

namespace libnet::http {
namespace {

using Limits = HttpParser::Limits;
using Result = HttpParser::Result;
using Headers = std::vector<std::pair<std::string, std::string>>;

// Everything a parsed request exposes, as a comparable value.
struct Parsed {
  Method method = Method::kGet;
  Version version = Version::kHttp11;
  std::string target;
  std::string path;
  std::string query;
  Headers headers;
  std::string body;
  bool keepAlive = false;

  bool operator==(const Parsed&) const = default;
};

Parsed snapshot(const HttpRequest& r) {
  return Parsed{r.method(), r.version(), r.target(), r.path(),
                r.query(),  r.headers(), r.body(),   r.keepAlive()};
}

// What one parser made of one input stream: the requests completed in order,
// then how it stopped.
struct Outcome {
  std::vector<Parsed> requests;
  bool error = false;
  int status = 0;
  std::string message;
  // Bytes still unconsumed at the end (a partial line); only meaningful
  // without an error, where where the parser stopped may depend on splits.
  std::string leftover;

  bool operator==(const Outcome& o) const {
    return requests == o.requests && error == o.error && status == o.status &&
           message == o.message && (error || leftover == o.leftover);
  }
};

void PrintTo(const Outcome& o, std::ostream* os) {
  *os << "{" << o.requests.size() << " request(s): ";
  for (const Parsed& r : o.requests) {
    *os << "[" << methodName(r.method) << " " << r.target << " " << versionName(r.version)
        << " headers=" << r.headers.size() << " body=" << r.body.size()
        << " keepAlive=" << r.keepAlive << "] ";
  }
  if (o.error) *os << "error " << o.status << " (" << o.message << ")";
  *os << " leftover=" << testing::PrintToString(o.leftover) << "}";
}

// Parses what is in buf, handling every complete request as a server would
// (record, reset, parse on). Returns true once the parser reports an error.
bool drain(HttpParser& parser, Buffer& buf, Outcome& out) {
  while (true) {
    switch (parser.parse(&buf)) {
      case Result::kComplete:
        out.requests.push_back(snapshot(parser.request()));
        parser.reset();
        break;
      case Result::kError:
        out.error = true;
        out.status = parser.errorStatus();
        out.message = std::string(parser.errorMessage());
        return true;
      case Result::kNeedMore:
        return false;
      case Result::kHead:  // only with setStopAfterHead()
      case Result::kPiece:
        ADD_FAILURE() << "kHead or kPiece without asking for them";
        return true;
    }
  }
}

// Feeds `input` in pieces of the given sizes. Every piece goes into a brand
// new Buffer together with the bytes the previous call left unconsumed, as a
// connection reading into a per-loop scratch buffer does; the old buffer is
// scribbled over and freed, so a parser that kept a pointer into it reads
// garbage (or trips ASan).
Outcome feed(std::string_view input, const std::vector<size_t>& pieces, const Limits& limits) {
  HttpParser parser(limits);
  Outcome out;
  std::string carry;
  size_t pos = 0;
  for (size_t n : pieces) {
    Buffer buf;
    buf.append(carry);
    buf.append(input.substr(pos, n));
    pos += n;
    const bool stop = drain(parser, buf, out);
    carry.assign(buf.view());
    char* whole = const_cast<char*>(buf.peek()) - buf.prependableBytes();
    std::memset(whole, 'Z', buf.prependableBytes() + buf.readableBytes());
    if (stop) break;
  }
  out.leftover = carry;
  return out;
}

std::vector<size_t> randomPieces(size_t total, uint32_t seed, size_t maxPiece) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> dist(1, std::max<size_t>(1, maxPiece));
  std::vector<size_t> pieces;
  for (size_t left = total; left > 0;) {
    const size_t n = std::min(left, dist(rng));
    pieces.push_back(n);
    left -= n;
  }
  return pieces;
}

// Parses `input` in one piece, then byte by byte, then in random splits
// (several seeds, small and large pieces), then, for short inputs, split in
// two at every position; every way must give the same outcome. Returns the
// one-piece outcome for the test's own assertions.
Outcome parseAllWays(std::string_view input, const Limits& limits = {}) {
  const Outcome whole = feed(input, {input.size()}, limits);
  {
    SCOPED_TRACE("byte by byte");
    EXPECT_EQ(feed(input, std::vector<size_t>(input.size(), 1), limits), whole);
  }
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    for (size_t maxPiece : {size_t{7}, input.size() / 2 + 1}) {
      SCOPED_TRACE(testing::Message() << "random pieces, seed " << seed << ", max " << maxPiece);
      EXPECT_EQ(feed(input, randomPieces(input.size(), seed, maxPiece), limits), whole);
    }
  }
  if (input.size() <= 2048) {
    for (size_t cut = 1; cut < input.size(); ++cut) {
      SCOPED_TRACE(testing::Message() << "split at " << cut);
      EXPECT_EQ(feed(input, {cut, input.size() - cut}, limits), whole);
    }
  }
  return whole;
}

// The single request in `input`, which must parse without error.
Parsed parseOne(std::string_view input, const Limits& limits = {}) {
  const Outcome o = parseAllWays(input, limits);
  EXPECT_FALSE(o.error) << o.status << " " << o.message;
  EXPECT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.leftover, "");
  return o.requests.empty() ? Parsed{} : o.requests.front();
}

// The error status `input` gets (0 if none), after all the ways of feeding it.
int errorOf(std::string_view input, const Limits& limits = {}) {
  const Outcome o = parseAllWays(input, limits);
  EXPECT_TRUE(o.error) << "no error for " << testing::PrintToString(std::string(input));
  if (o.error) {
    EXPECT_FALSE(o.message.empty());
  }
  return o.status;
}

std::string get(std::string_view target, std::string_view extraHeaders = "",
                std::string_view version = "HTTP/1.1") {
  return "GET " + std::string(target) + " " + std::string(version) + "\r\nHost: h\r\n" +
         std::string(extraHeaders) + "\r\n";
}

// ---------------------------------------------------------------------------
// Request line

TEST(HttpParserTest, SimpleGet) {
  const Parsed r = parseOne(
      "GET /index.html?x=1&y=2 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test/1.0\r\n\r\n");
  EXPECT_EQ(r.method, Method::kGet);
  EXPECT_EQ(r.version, Version::kHttp11);
  EXPECT_EQ(r.target, "/index.html?x=1&y=2");
  EXPECT_EQ(r.path, "/index.html");
  EXPECT_EQ(r.query, "x=1&y=2");
  EXPECT_EQ(r.headers, (Headers{{"Host", "example.com"}, {"User-Agent", "test/1.0"}}));
  EXPECT_EQ(r.body, "");
  EXPECT_TRUE(r.keepAlive);
}

TEST(HttpParserTest, RequestAccessors) {
  HttpParser parser;
  Buffer buf;
  buf.append("DELETE /a/b%20c?q HTTP/1.0\r\n\r\n");
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  const HttpRequest& r = parser.request();
  EXPECT_EQ(r.method(), Method::kDelete);
  EXPECT_EQ(r.methodName(), "DELETE");
  EXPECT_EQ(r.version(), Version::kHttp10);
  EXPECT_EQ(r.path(), "/a/b%20c");  // not percent-decoded
  EXPECT_EQ(r.query(), "q");
  EXPECT_EQ(buf.readableBytes(), 0u);
  EXPECT_EQ(parser.errorStatus(), 0);
  EXPECT_EQ(parser.errorMessage(), "");
}

TEST(HttpParserTest, AllNineMethods) {
  const std::pair<std::string, Method> methods[] = {
      {"GET", Method::kGet},     {"HEAD", Method::kHead},     {"POST", Method::kPost},
      {"PUT", Method::kPut},     {"DELETE", Method::kDelete}, {"OPTIONS", Method::kOptions},
      {"PATCH", Method::kPatch}, {"TRACE", Method::kTrace},
  };
  for (const auto& [name, method] : methods) {
    SCOPED_TRACE(name);
    const Parsed r = parseOne(name + " /x HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_EQ(r.method, method);
    EXPECT_EQ(methodName(r.method), name);
  }
  const Parsed c = parseOne("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
  EXPECT_EQ(c.method, Method::kConnect);
  EXPECT_EQ(methodName(c.method), "CONNECT");
  EXPECT_EQ(c.path, "example.com:443");
  EXPECT_EQ(c.query, "");
}

TEST(HttpParserTest, UnknownMethodIs501) {
  EXPECT_EQ(errorOf("BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n"), 501);
  // Methods are case-sensitive: "get" is a valid token, not GET.
  EXPECT_EQ(errorOf("get / HTTP/1.1\r\nHost: h\r\n\r\n"), 501);
  EXPECT_EQ(errorOf("PROPFIND / HTTP/1.1\r\nHost: h\r\n\r\n"), 501);
}

TEST(HttpParserTest, InvalidMethodCharactersAre400) {
  EXPECT_EQ(errorOf("GE(T / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("G\x01T / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(errorOf(" GET / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
}

TEST(HttpParserTest, Versions) {
  EXPECT_EQ(parseOne(get("/", "", "HTTP/1.0")).version, Version::kHttp10);
  EXPECT_EQ(parseOne(get("/", "", "HTTP/1.1")).version, Version::kHttp11);
  // A later 1.x minor is handled as 1.1 (RFC 9110 2.5).
  EXPECT_EQ(parseOne(get("/", "", "HTTP/1.2")).version, Version::kHttp11);
  EXPECT_EQ(parseOne(get("/", "", "HTTP/1.9")).version, Version::kHttp11);
}

TEST(HttpParserTest, OtherMajorVersionIs505) {
  EXPECT_EQ(errorOf(get("/", "", "HTTP/2.0")), 505);
  EXPECT_EQ(errorOf(get("/", "", "HTTP/3.0")), 505);
  EXPECT_EQ(errorOf(get("/", "", "HTTP/0.9")), 505);
  // The version is judged before the method.
  EXPECT_EQ(errorOf("BREW / HTTP/2.0\r\nHost: h\r\n\r\n"), 505);
}

TEST(HttpParserTest, MalformedVersionIs400) {
  for (const char* v : {"HTTP/1", "HTTP/1.10", "http/1.1", "HTTP/11", "HTTPS/1.1", "HTTP/1.x",
                        "HTTP/a.1", "HTTP/1.1 ", "HTTP 1.1", "", "HTTP/1,1"}) {
    SCOPED_TRACE(v);
    EXPECT_EQ(errorOf(get("/", "", v)), 400);
  }
  // No version at all (HTTP/0.9 style) and a doubled space.
  EXPECT_EQ(errorOf("GET /\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("GET  / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("GET / HTTP/1.1 extra\r\nHost: h\r\n\r\n"), 400);
}

TEST(HttpParserTest, Targets) {
  Parsed r = parseOne(get("/a?b?c"));
  EXPECT_EQ(r.path, "/a");
  EXPECT_EQ(r.query, "b?c");
  r = parseOne(get("/a?"));
  EXPECT_EQ(r.path, "/a");
  EXPECT_EQ(r.query, "");
  r = parseOne(get("/caf%C3%A9?q=%E2%82%AC"));  // non-ASCII arrives percent-encoded
  EXPECT_EQ(r.path, "/caf%C3%A9");
  EXPECT_EQ(r.query, "q=%E2%82%AC");
  r = parseOne("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(r.method, Method::kOptions);
  EXPECT_EQ(r.path, "*");

  // absolute-form: path and query come from after the authority.
  r = parseOne(get("http://example.com:8080/a/b?c=d"));
  EXPECT_EQ(r.target, "http://example.com:8080/a/b?c=d");
  EXPECT_EQ(r.path, "/a/b");
  EXPECT_EQ(r.query, "c=d");
  r = parseOne(get("http://example.com"));
  EXPECT_EQ(r.path, "/");
  EXPECT_EQ(r.query, "");
  r = parseOne(get("HTTPS://example.com?x=1"));
  EXPECT_EQ(r.path, "/");
  EXPECT_EQ(r.query, "x=1");
}

TEST(HttpParserTest, InvalidTargetsAre400) {
  for (const char* t : {"example.com/a", "http:///a", "http://", "://x/", "1http://x/", "a",
                        "/a#frag", "/a\x7f", "/a\x01"}) {
    SCOPED_TRACE(testing::PrintToString(std::string(t)));
    EXPECT_EQ(errorOf(get(t)), 400);
  }
  EXPECT_EQ(errorOf("GET * HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("CONNECT /x HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("CONNECT example.com HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
}

// A request-target is ASCII (RFC 9112 3.2, RFC 3986 2.1): a byte of 0x80 or
// more must arrive percent-encoded. Raw ones are refused wherever they sit
// (path, query, absolute-form, CONNECT authority) and however the bytes
// were split; parseAllWays feeds every input whole and byte by byte too.
TEST(HttpParserTest, RawNonAsciiTargetBytesAre400) {
  const std::string targets[] = {
      "/\x80",                  // the lowest non-ASCII byte
      "/\xff",                  // the highest
      "/a\x80/b",               // between ASCII bytes
      "/caf\xc3\xa9",           // UTF-8 in the path
      "/\xe2\x82\xac/x",        // a three-byte sequence first in the path
      "/search?q=caf\xc3\xa9",  // UTF-8 in the query
      "/s?\xff",                //
      "http://h/caf\xc3\xa9",   // absolute-form path
      "http://h\xc3\xa9/",      // absolute-form authority
  };
  for (const std::string& t : targets) {
    SCOPED_TRACE(testing::PrintToString(t));
    const Outcome o = parseAllWays(get(t));
    EXPECT_TRUE(o.error);
    EXPECT_EQ(o.status, 400);
    EXPECT_EQ(o.message, "invalid request target");
    EXPECT_TRUE(o.requests.empty());
  }
  const Outcome connect = parseAllWays("CONNECT h\xc3\xa9:443 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(connect.status, 400);
  EXPECT_EQ(connect.message, "invalid request target");
}

// The same bytes stay legal in field values (obs-text, RFC 9110 5.5): only
// the target is ASCII-only.
TEST(HttpParserTest, NonAsciiStaysAllowedInFieldValues) {
  const Parsed r = parseOne(get("/caf%C3%A9", "X-Name: caf\xc3\xa9\r\nX-Raw: \x80\xff\r\n"));
  EXPECT_EQ(r.path, "/caf%C3%A9");
  EXPECT_EQ(r.headers, (Headers{{"Host", "h"}, {"X-Name", "caf\xc3\xa9"}, {"X-Raw", "\x80\xff"}}));
}

TEST(HttpParserTest, BareLineFeedsAndMixedLineEnds) {
  Parsed r = parseOne("GET /lf HTTP/1.1\nHost: h\nAccept: */*\n\n");
  EXPECT_EQ(r.path, "/lf");
  EXPECT_EQ(r.headers, (Headers{{"Host", "h"}, {"Accept", "*/*"}}));
  r = parseOne("GET /mixed HTTP/1.1\r\nHost: h\nAccept: */*\r\n\n");
  EXPECT_EQ(r.headers, (Headers{{"Host", "h"}, {"Accept", "*/*"}}));
}

TEST(HttpParserTest, StrayCarriageReturnIs400) {
  EXPECT_EQ(errorOf("GET /\r HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("GET / HTTP/1.1\r\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n"), 400);
}

TEST(HttpParserTest, LeadingEmptyLinesAreSkipped) {
  EXPECT_EQ(parseOne("\r\n\r\nGET /a HTTP/1.1\r\nHost: h\r\n\r\n").path, "/a");
  EXPECT_EQ(parseOne("\n\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n").path, "/b");
}

TEST(HttpParserTest, RequestLineLimitIs414) {
  Limits limits;
  limits.maxRequestLine = 32;
  // The limit counts the line with its line end.
  const std::string fits = "GET /" + std::string(16, 'a') + " HTTP/1.1\r\n";
  ASSERT_EQ(fits.size(), 32u);
  EXPECT_EQ(parseOne(fits + "Host: h\r\n\r\n", limits).path, "/" + std::string(16, 'a'));
  const std::string over = "GET /" + std::string(17, 'a') + " HTTP/1.1\r\n";
  EXPECT_EQ(errorOf(over + "Host: h\r\n\r\n", limits), 414);
  // With a bare LF the same content is one byte shorter and fits.
  EXPECT_FALSE(
      parseAllWays("GET /" + std::string(17, 'a') + " HTTP/1.1\nHost: h\n\n", limits).error);

  // Default limit, 8 KiB.
  EXPECT_EQ(errorOf(get("/" + std::string(9000, 'a'))), 414);
  EXPECT_FALSE(parseAllWays(get("/" + std::string(8000, 'a'))).error);
}

TEST(HttpParserTest, LongRequestLineIs414BeforeItEnds) {
  Limits limits;
  limits.maxRequestLine = 32;
  HttpParser parser(limits);
  Buffer buf;
  buf.append("GET /" + std::string(26, 'a'));  // 31 bytes: a line end still fits
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  buf.append("a");  // 32 bytes and no line end: the line must exceed 32
  EXPECT_EQ(parser.parse(&buf), Result::kError);
  EXPECT_EQ(parser.errorStatus(), 414);
  EXPECT_EQ(parser.errorMessage(), "request line too long");
}

// ---------------------------------------------------------------------------
// Header fields

TEST(HttpParserTest, HeaderValuesTrimmedAndOrderKept) {
  const Parsed r = parseOne(
      "GET / HTTP/1.1\r\n"
      "Host:h\r\n"
      "X-Spaces:   padded value \t \r\n"
      "X-Empty:\r\n"
      "X-Empty-Spaces:   \r\n"
      "X-Colon: a:b: c\r\n"
      "X-Tab: a\tb\r\n"
      "X-Dup: 1\r\n"
      "x-dup: 2\r\n"
      "X-Utf8: caf\xc3\xa9\r\n"
      "\r\n");
  EXPECT_EQ(r.headers, (Headers{{"Host", "h"},
                                {"X-Spaces", "padded value"},
                                {"X-Empty", ""},
                                {"X-Empty-Spaces", ""},
                                {"X-Colon", "a:b: c"},
                                {"X-Tab", "a\tb"},
                                {"X-Dup", "1"},
                                {"x-dup", "2"},
                                {"X-Utf8", "caf\xc3\xa9"}}));
}

TEST(HttpParserTest, HeaderLookupIsCaseInsensitive) {
  HttpParser parser;
  Buffer buf;
  buf.append(
      "GET / HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nX-Dup: first\r\n"
      "X-DUP: second\r\n\r\n");
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  const HttpRequest& r = parser.request();
  EXPECT_EQ(r.header("content-type"), "text/plain");
  EXPECT_EQ(r.header("CONTENT-TYPE"), "text/plain");
  EXPECT_EQ(r.header("Content-Type"), "text/plain");
  EXPECT_EQ(r.header("x-dup"), "first");
  EXPECT_EQ(r.header("HOST"), "h");
  EXPECT_FALSE(r.header("Content-Length").has_value());
  EXPECT_FALSE(r.header("Content-Typ").has_value());
  EXPECT_FALSE(r.header("").has_value());
}

TEST(HttpParserTest, MalformedFieldLinesAre400) {
  const char* bad[] = {
      "Host : h\r\n",          // whitespace before the colon
      "Host\t: h\r\n",         // same, with a tab
      "X: a\r\n  folded\r\n",  // obs-fold
      "X: a\r\n\tfolded\r\n",  // obs-fold with a tab
      "NoColon\r\n",           //
      ": no name\r\n",         //
      "X(y): 1\r\n",           // '(' is not a token character
      "X y: 1\r\n",            //
      "X: a\x01z\r\n",         // control character in the value
      "X: a\x7fz\r\n",         // DEL in the value
  };
  for (const char* field : bad) {
    SCOPED_TRACE(testing::PrintToString(std::string(field)));
    EXPECT_EQ(errorOf("GET / HTTP/1.1\r\nHost: h\r\n" + std::string(field) + "\r\n"), 400);
  }
  // NUL inside a value (the list above stops at it).
  EXPECT_EQ(errorOf(std::string("GET / HTTP/1.1\r\nHost: h\r\nX: a\0z\r\n\r\n", 35)), 400);
  // Whitespace between the request line and the first field.
  EXPECT_EQ(errorOf("GET / HTTP/1.1\r\n Host: h\r\n\r\n"), 400);
}

// Field values are checked eight bytes at a time; a bad byte must be found
// in every position of a word, and next to bytes that are fine (high bytes,
// tabs) in the same word.
TEST(HttpParserTest, FieldValueBytesInEveryPosition) {
  auto statusOf = [](const std::string& value) {
    HttpParser parser;
    Buffer buf;
    buf.append("GET / HTTP/1.1\r\nHost: h\r\nX: " + value + "\r\n\r\n");
    const Result r = parser.parse(&buf);
    return r == Result::kComplete ? 0 : parser.errorStatus();
  };
  std::string good;
  for (int c = 0x20; c <= 0xff; ++c) {
    if (c != 0x7f) good.push_back(static_cast<char>(c));
  }
  good = "a" + good + "z";  // no whitespace at the ends, which would be trimmed
  EXPECT_EQ(statusOf(good), 0);
  for (size_t at = 1; at + 1 < 40; ++at) {
    std::string value = "v" + std::string(38, '\xe9') + "v";
    value[at] = '\t';
    EXPECT_EQ(statusOf(value), 0) << "tab at " << at;
    for (char bad : {'\0', '\x01', '\x1f', '\x7f', '\r', '\x0b'}) {
      value[at] = bad;
      EXPECT_EQ(statusOf(value), 400) << "byte " << int(bad) << " at " << at;
    }
  }
}

TEST(HttpParserTest, WhitespaceBeforeColonMessage) {
  HttpParser parser;
  Buffer buf;
  buf.append("GET / HTTP/1.1\r\nHost : h\r\n\r\n");
  ASSERT_EQ(parser.parse(&buf), Result::kError);
  EXPECT_EQ(parser.errorStatus(), 400);
  EXPECT_EQ(parser.errorMessage(), "whitespace before colon");
}

TEST(HttpParserTest, HostRules) {
  EXPECT_EQ(errorOf("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"), 400);
  EXPECT_EQ(errorOf("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), 400);
  // HTTP/1.0 may omit Host; an empty Host is allowed.
  EXPECT_EQ(parseOne("GET / HTTP/1.0\r\n\r\n").headers.size(), 0u);
  EXPECT_EQ(parseOne("GET / HTTP/1.1\r\nHost:\r\n\r\n").headers, (Headers{{"Host", ""}}));
}

TEST(HttpParserTest, HeaderBytesLimitIs431) {
  Limits limits;
  limits.maxHeaderBytes = 32;
  // Field lines plus the blank line, line ends included: 9 + 21 + 2 = 32.
  const std::string fits = "GET / HTTP/1.1\r\nHost: h\r\nX: 1234567890123456\r\n\r\n";
  EXPECT_EQ(parseOne(fits, limits).headers.size(), 2u);
  const std::string over = "GET / HTTP/1.1\r\nHost: h\r\nX: 12345678901234567\r\n\r\n";
  EXPECT_EQ(errorOf(over, limits), 431);
  // The same with bare LFs is three bytes shorter and fits.
  EXPECT_FALSE(parseAllWays("GET / HTTP/1.1\nHost: h\nX: 12345678901234567\n\n", limits).error);
}

TEST(HttpParserTest, HeaderBytesLimitCountsAnIncompleteLine) {
  Limits limits;
  limits.maxHeaderBytes = 32;
  HttpParser parser(limits);
  Buffer buf;
  buf.append("GET / HTTP/1.1\r\nHost: h\r\nX: ");
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  buf.append(std::string(19, 'v'));  // 9 + 22 pending, + 1 for the line end still due
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  buf.append("v");
  EXPECT_EQ(parser.parse(&buf), Result::kError);
  EXPECT_EQ(parser.errorStatus(), 431);

  // The default limit, 64 KiB, with one endless field.
  HttpParser defaults;
  Buffer big;
  big.append("GET / HTTP/1.1\r\nX: " + std::string(70 * 1024, 'v'));
  EXPECT_EQ(defaults.parse(&big), Result::kError);
  EXPECT_EQ(defaults.errorStatus(), 431);
}

std::string manyHeaders(size_t n) {
  std::string s = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (size_t i = 1; i < n; ++i) s += "X-" + std::to_string(i) + ": v\r\n";
  return s + "\r\n";
}

TEST(HttpParserTest, HeaderCountLimitIs431) {
  Limits limits;
  limits.maxHeaderCount = 3;
  EXPECT_EQ(parseOne(manyHeaders(3), limits).headers.size(), 3u);
  EXPECT_EQ(errorOf(manyHeaders(4), limits), 431);
  // Default limit, 100.
  EXPECT_EQ(parseOne(manyHeaders(100)).headers.size(), 100u);
  EXPECT_EQ(errorOf(manyHeaders(101)), 431);
}

TEST(HttpParserTest, DefaultLimits) {
  const Limits limits;
  EXPECT_EQ(limits.maxRequestLine, 8u * 1024);
  EXPECT_EQ(limits.maxHeaderBytes, 64u * 1024);
  EXPECT_EQ(limits.maxHeaderCount, 100u);
  EXPECT_EQ(limits.maxBodyBytes, 1024u * 1024);
  EXPECT_EQ(HttpParser().limits().maxBodyBytes, 1024u * 1024);
}

// ---------------------------------------------------------------------------
// Content-Length bodies

std::string post(std::string_view headers, std::string_view body = "",
                 std::string_view version = "HTTP/1.1") {
  return "POST /submit " + std::string(version) + "\r\nHost: h\r\n" + std::string(headers) +
         "\r\n" + std::string(body);
}

TEST(HttpParserTest, ContentLengthBody) {
  Parsed r = parseOne(post("Content-Length: 11\r\n", "hello world"));
  EXPECT_EQ(r.method, Method::kPost);
  EXPECT_EQ(r.body, "hello world");
  r = parseOne(post("Content-Length: 0\r\n"));
  EXPECT_EQ(r.body, "");
  // Binary bytes, line ends included, are payload, not lines.
  const std::string binary("a\r\n\r\n\0\nb", 8);
  EXPECT_EQ(parseOne(post("Content-Length: 8\r\n", binary)).body, binary);
  // Identical duplicates, as a list or as separate fields, are one length.
  EXPECT_EQ(parseOne(post("Content-Length: 3, 3\r\n", "abc")).body, "abc");
  EXPECT_EQ(parseOne(post("Content-Length: 3\r\nContent-Length: 3\r\n", "abc")).body, "abc");
  EXPECT_EQ(parseOne(post("content-length:   007 \r\n", "1234567")).body, "1234567");
}

TEST(HttpParserTest, NoFramingMeansNoBody) {
  // Without Content-Length or Transfer-Encoding the request ends with its
  // header section; what follows is the next request.
  const Outcome o = parseAllWays(post("") + "GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_FALSE(o.error);
  ASSERT_EQ(o.requests.size(), 2u);
  EXPECT_EQ(o.requests[0].body, "");
  EXPECT_EQ(o.requests[1].method, Method::kGet);
}

TEST(HttpParserTest, InvalidContentLengthIs400) {
  for (const char* v : {"abc", "-1", "+5", "5 5", "", "0x10", "5;", "1.0", ",", "3, 4"}) {
    SCOPED_TRACE(v);
    EXPECT_EQ(errorOf(post("Content-Length: " + std::string(v) + "\r\n", "abcde")), 400);
  }
  EXPECT_EQ(errorOf(post("Content-Length: 3\r\nContent-Length: 4\r\n", "abcd")), 400);
}

TEST(HttpParserTest, BodyLimitIs413AsSoonAsContentLengthIsSeen) {
  Limits limits;
  limits.maxBodyBytes = 10;
  EXPECT_EQ(parseOne(post("Content-Length: 10\r\n", "0123456789"), limits).body, "0123456789");
  EXPECT_EQ(errorOf(post("Content-Length: 11\r\n", "01234567890"), limits), 413);
  EXPECT_EQ(errorOf(post("Content-Length: 99999999999999999999999\r\n", "x")), 413);

  // No body byte and not even the end of the header section is needed.
  HttpParser parser(limits);
  Buffer buf;
  buf.append("POST / HTTP/1.1\r\nContent-Length: 11\r\n");
  EXPECT_EQ(parser.parse(&buf), Result::kError);
  EXPECT_EQ(parser.errorStatus(), 413);
}

// ---------------------------------------------------------------------------
// Chunked bodies

TEST(HttpParserTest, ChunkedBodyWithExtensionsAndTrailers) {
  const Parsed r = parseOne(post("Transfer-Encoding: chunked\r\n",
                                 "5\r\nhello\r\n"
                                 "6;name=value;flag\r\n world\r\n"
                                 "A ; quoted=\"a b\"\r\n0123456789\r\n"
                                 "0\r\n"
                                 "Trailer-One: x\r\n"
                                 "Trailer-Two: y\r\n"
                                 "\r\n"));
  EXPECT_EQ(r.body, "hello world0123456789");
  // Trailers are dropped; the fields are the header section's.
  EXPECT_EQ(r.headers, (Headers{{"Host", "h"}, {"Transfer-Encoding", "chunked"}}));
}

TEST(HttpParserTest, ChunkedVariants) {
  // Case-insensitive coding, hex in both cases, leading zeros, bare LFs, no trailers.
  EXPECT_EQ(parseOne(post("Transfer-Encoding: Chunked\r\n",
                          "a\r\n0123456789\r\nB\r\nabcdefghijk\r\n00010\r\n0123456789abcdef\r\n"
                          "0\r\n\r\n"))
                .body,
            "0123456789abcdefghijk0123456789abcdef");
  EXPECT_EQ(parseOne(post("Transfer-Encoding: chunked\n", "3\nabc\n0\n\n")).body, "abc");
  EXPECT_EQ(parseOne(post("Transfer-Encoding: chunked\r\n", "0\r\n\r\n")).body, "");
  // Chunk data may contain anything, line ends included.
  EXPECT_EQ(parseOne(post("Transfer-Encoding: chunked\r\n", "4\r\n\r\n\r\n\r\n0\r\n\r\n")).body,
            "\r\n\r\n");
}

TEST(HttpParserTest, MalformedChunksAre400) {
  const char* bad[] = {
      "x\r\nabc\r\n0\r\n\r\n",          // not hex
      "\r\n",                           // empty size
      "-3\r\nabc\r\n0\r\n\r\n",         //
      "3 x\r\nabc\r\n0\r\n\r\n",        // junk after the size
      "3\r\nabcX\r\n0\r\n\r\n",         // data longer than announced
      "3\r\nabc\rX0\r\n\r\n",           // CR without LF after the data
      "3;ext\x01\r\nabc\r\n0\r\n\r\n",  // control character in an extension
      "0\r\nBad Trailer: x\r\n\r\n",    // invalid trailer name
      "0\r\n folded\r\n\r\n",           // folded trailer
  };
  for (const char* body : bad) {
    SCOPED_TRACE(testing::PrintToString(std::string(body)));
    EXPECT_EQ(errorOf(post("Transfer-Encoding: chunked\r\n", body)), 400);
  }
  // An endless chunk-size line (extensions that never end).
  EXPECT_EQ(errorOf(post("Transfer-Encoding: chunked\r\n", "1;" + std::string(5000, 'e'))), 400);
}

TEST(HttpParserTest, ChunkedBodyLimitIs413AsSoonAsKnown) {
  Limits limits;
  limits.maxBodyBytes = 10;
  const std::string te = "Transfer-Encoding: chunked\r\n";
  EXPECT_EQ(parseOne(post(te, "6\r\n012345\r\n4\r\n6789\r\n0\r\n\r\n"), limits).body, "0123456789");
  EXPECT_EQ(errorOf(post(te, "6\r\n012345\r\n5\r\n6789a\r\n0\r\n\r\n"), limits), 413);
  EXPECT_EQ(errorOf(post(te, "FFFFFFFFFFFFFFFFFFFFFF\r\n")), 413);

  // The second size line is enough; its data need not arrive.
  HttpParser parser(limits);
  Buffer buf;
  buf.append(post(te, "6\r\n012345\r\n5\r\n"));
  EXPECT_EQ(parser.parse(&buf), Result::kError);
  EXPECT_EQ(parser.errorStatus(), 413);
}

TEST(HttpParserTest, TrailersCountAgainstHeaderLimits) {
  Limits limits;
  limits.maxHeaderCount = 3;
  const std::string te = "Transfer-Encoding: chunked\r\n";
  EXPECT_EQ(parseOne(post(te, "0\r\nT: 1\r\n\r\n"), limits).body, "");
  EXPECT_EQ(errorOf(post(te, "0\r\nT: 1\r\nU: 2\r\n\r\n"), limits), 431);

  Limits bytes;
  bytes.maxHeaderBytes = 64;
  EXPECT_EQ(errorOf(post(te, "0\r\nT: " + std::string(40, 't') + "\r\n\r\n"), bytes), 431);
}

TEST(HttpParserTest, UnsupportedTransferEncodingIs501) {
  for (const char* te :
       {"gzip", "gzip, chunked", "chunked, gzip", "identity", "chunked, chunked", "deflate"}) {
    SCOPED_TRACE(te);
    EXPECT_EQ(errorOf(post("Transfer-Encoding: " + std::string(te) + "\r\n", "0\r\n\r\n")), 501);
  }
  EXPECT_EQ(
      errorOf(post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")),
      501);
  EXPECT_EQ(errorOf(post("Transfer-Encoding: \r\n", "0\r\n\r\n")), 400);
}

// RFC 9110 10.1.1: 100-continue (any case) is the one expectation; any other,
// or a list with another in it, cannot be met.
TEST(HttpParserTest, UnknownExpectationIs417) {
  for (const char* v : {"100-continue", "100-Continue", "100-CONTINUE"}) {
    SCOPED_TRACE(v);
    EXPECT_EQ(
        parseOne(post("Content-Length: 5\r\nExpect: " + std::string(v) + "\r\n", "abcde")).body,
        "abcde");
  }
  for (const char* v : {"", "foo", "100-continue, foo", "100-continued", "200-ok"}) {
    SCOPED_TRACE(v);
    EXPECT_EQ(errorOf(post("Content-Length: 5\r\nExpect: " + std::string(v) + "\r\n", "abcde")),
              417);
  }
  EXPECT_EQ(errorOf(get("/", "Expect: foo\r\n")), 417);
}

TEST(HttpParserTest, IdenticalContentLengthListIsOneLength) {
  EXPECT_EQ(parseOne(post("Content-Length: 5, 5\r\n", "abcde")).body, "abcde");
  EXPECT_EQ(parseOne(post("Content-Length: 5\r\nContent-Length: 5\r\n", "abcde")).body, "abcde");
  EXPECT_EQ(errorOf(post("Content-Length: 5, 6\r\n", "abcdef")), 400);
  EXPECT_EQ(errorOf(post("Content-Length: 5\r\nContent-Length: 5, 6\r\n", "abcdef")), 400);
}

TEST(HttpParserTest, ContentLengthWithTransferEncodingIs400) {
  EXPECT_EQ(errorOf(post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(errorOf(post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n")), 400);
  // HTTP/1.0 has no chunked coding; its presence means the framing is faulty.
  EXPECT_EQ(errorOf(post("Transfer-Encoding: chunked\r\n", "0\r\n\r\n", "HTTP/1.0")), 400);
}

// ---------------------------------------------------------------------------
// Keep-alive

bool keepAliveOf(std::string_view version, std::string_view connectionFields) {
  const Parsed r = parseOne(get("/", connectionFields, version));
  return r.keepAlive;
}

TEST(HttpParserTest, KeepAliveHttp11) {
  EXPECT_TRUE(keepAliveOf("HTTP/1.1", ""));
  EXPECT_FALSE(keepAliveOf("HTTP/1.1", "Connection: close\r\n"));
  EXPECT_FALSE(keepAliveOf("HTTP/1.1", "Connection: Close\r\n"));
  EXPECT_FALSE(keepAliveOf("HTTP/1.1", "connection: CLOSE\r\n"));
  EXPECT_FALSE(keepAliveOf("HTTP/1.1", "Connection: Upgrade, close\r\n"));
  EXPECT_FALSE(keepAliveOf("HTTP/1.1", "Connection: Upgrade\r\nConnection: close\r\n"));
  EXPECT_TRUE(keepAliveOf("HTTP/1.1", "Connection: keep-alive, Upgrade\r\n"));
  EXPECT_TRUE(keepAliveOf("HTTP/1.1", "Connection: closed\r\n"));  // a different token
  EXPECT_TRUE(keepAliveOf("HTTP/1.1", "X-Connection: close\r\n"));
  EXPECT_TRUE(keepAliveOf("HTTP/1.2", ""));
}

TEST(HttpParserTest, KeepAliveHttp10) {
  EXPECT_FALSE(keepAliveOf("HTTP/1.0", ""));
  EXPECT_TRUE(keepAliveOf("HTTP/1.0", "Connection: keep-alive\r\n"));
  EXPECT_TRUE(keepAliveOf("HTTP/1.0", "Connection: Keep-Alive\r\n"));
  EXPECT_TRUE(keepAliveOf("HTTP/1.0", "Connection: keep-alive, Upgrade\r\n"));
  EXPECT_TRUE(keepAliveOf("HTTP/1.0", "Connection: Upgrade ,  KEEP-ALIVE \r\n"));
  EXPECT_FALSE(keepAliveOf("HTTP/1.0", "Connection: keep-alive, close\r\n"));
  EXPECT_FALSE(keepAliveOf("HTTP/1.0", "Connection: keep-alive\r\nConnection: Close\r\n"));
  EXPECT_FALSE(keepAliveOf("HTTP/1.0", "Connection: keep-alive-ish\r\n"));
  EXPECT_FALSE(keepAliveOf("HTTP/1.0", "Keep-Alive: timeout=5\r\n"));
}

// ---------------------------------------------------------------------------
// Pipelining and the parser's state

TEST(HttpParserTest, TwoPipelinedRequests) {
  const Outcome o = parseAllWays(get("/one") + get("/two", "Connection: close\r\n"));
  ASSERT_FALSE(o.error);
  ASSERT_EQ(o.requests.size(), 2u);
  EXPECT_EQ(o.requests[0].path, "/one");
  EXPECT_TRUE(o.requests[0].keepAlive);
  EXPECT_EQ(o.requests[1].path, "/two");
  EXPECT_FALSE(o.requests[1].keepAlive);
  EXPECT_EQ(o.leftover, "");
}

TEST(HttpParserTest, ThreePipelinedRequestsWithBodiesAndLeftover) {
  const std::string partial = "GET /fourth HTTP/1.1\r\nHost: h\r\nAcc";
  const Outcome o =
      parseAllWays(post("Content-Length: 5\r\n", "first") +
                   post("Transfer-Encoding: chunked\r\n", "6\r\nsecond\r\n0\r\n\r\n") +
                   "\r\n" +  // a stray CRLF after a body, skipped
                   get("/third") + partial);
  ASSERT_FALSE(o.error) << o.message;
  ASSERT_EQ(o.requests.size(), 3u);
  EXPECT_EQ(o.requests[0].body, "first");
  EXPECT_EQ(o.requests[1].body, "second");
  EXPECT_EQ(o.requests[2].path, "/third");
  // The header line in progress stays in the buffer for the next read.
  EXPECT_EQ(o.leftover, "Acc");
}

TEST(HttpParserTest, StopsRightAfterACompleteRequest) {
  HttpParser parser;
  Buffer buf;
  const std::string second = get("/second");
  const std::string third = post("Content-Length: 3\r\n", "abc");
  buf.append(get("/first") + second + third);
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(parser.request().path(), "/first");
  EXPECT_EQ(buf.view(), second + third);
  // Without reset() nothing more is consumed.
  EXPECT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(buf.view(), second + third);
  EXPECT_EQ(parser.request().path(), "/first");

  parser.reset();
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(parser.request().path(), "/second");
  EXPECT_EQ(buf.view(), third);
  parser.reset();
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(parser.request().body(), "abc");
  EXPECT_EQ(buf.readableBytes(), 0u);
  parser.reset();
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
}

TEST(HttpParserTest, ErrorIsStickyUntilReset) {
  HttpParser parser;
  Buffer buf;
  buf.append("BAD\r\n");
  ASSERT_EQ(parser.parse(&buf), Result::kError);
  EXPECT_EQ(parser.errorStatus(), 400);
  EXPECT_FALSE(parser.errorMessage().empty());

  buf.append(get("/good"));
  const size_t before = buf.readableBytes();
  EXPECT_EQ(parser.parse(&buf), Result::kError);
  EXPECT_EQ(buf.readableBytes(), before);
  EXPECT_EQ(parser.errorStatus(), 400);

  parser.reset();
  EXPECT_EQ(parser.errorStatus(), 0);
  EXPECT_EQ(parser.errorMessage(), "");
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(parser.request().path(), "/good");
}

TEST(HttpParserTest, PhasesForDeadlines) {
  HttpParser parser;
  Buffer buf;
  EXPECT_FALSE(parser.midRequest());
  EXPECT_TRUE(parser.inHeaderPhase());
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_FALSE(parser.midRequest());  // nothing seen yet: idle

  buf.append("\r\n");  // blank lines before a request count as started
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_TRUE(parser.midRequest());
  EXPECT_TRUE(parser.inHeaderPhase());

  buf.append("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n");
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_TRUE(parser.midRequest());
  EXPECT_TRUE(parser.inHeaderPhase());

  buf.append("\r\nab");
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_TRUE(parser.midRequest());
  EXPECT_FALSE(parser.inHeaderPhase());

  buf.append("cd");
  EXPECT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_FALSE(parser.midRequest());
  EXPECT_FALSE(parser.inHeaderPhase());

  parser.reset();
  EXPECT_FALSE(parser.midRequest());
  EXPECT_TRUE(parser.inHeaderPhase());

  buf.append("G");  // an incomplete line, left in the buffer, still counts
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_EQ(buf.view(), "G");
  EXPECT_TRUE(parser.midRequest());

  buf.append("ET / HTTP/9.9\r\n");
  EXPECT_EQ(parser.parse(&buf), Result::kError);
  EXPECT_FALSE(parser.midRequest());
  EXPECT_FALSE(parser.inHeaderPhase());
}

// The parser must take body bytes out of the buffer as they come, so a
// request never has to fit in one buffer.
TEST(HttpParserTest, BodiesAreConsumedIncrementally) {
  const std::string payload = std::string(3000, 'p') + "end";
  for (const std::string& input :
       {post("Content-Length: " + std::to_string(payload.size()) + "\r\n", payload),
        post("Transfer-Encoding: chunked\r\n", "bbb\r\n" + payload + "\r\n0\r\n\r\n")}) {
    HttpParser parser;
    const size_t headEnd = input.find("\r\n\r\n") + 4;
    Buffer head;
    head.append(input.substr(0, headEnd));
    ASSERT_EQ(parser.parse(&head), Result::kNeedMore);
    Result last = Result::kNeedMore;
    std::string carry;
    for (size_t pos = headEnd; pos < input.size(); pos += 100) {
      Buffer piece;
      piece.append(carry);
      piece.append(input.substr(pos, 100));
      last = parser.parse(&piece);
      // A chunk-size line or the line end after chunk data may wait for the
      // next piece; a body byte never does.
      EXPECT_LT(piece.readableBytes(), 8u);
      carry.assign(piece.view());
    }
    EXPECT_EQ(last, Result::kComplete);
    EXPECT_EQ(parser.request().body(), payload);
  }
}

// What a server budgets for a body: the whole Content-Length as soon as the
// headers end, a chunked body chunk by chunk as each size line arrives.
TEST(HttpParserTest, BodyBytesCommittedAsTheBodyBecomesKnown) {
  HttpParser parser;
  Buffer buf;
  buf.append("POST /submit HTTP/1.1\r\nHost: h\r\nContent-Length: 200000\r\n");
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_EQ(parser.bodyBytesCommitted(), 0u);  // headers not done yet
  buf.append("\r\n" + std::string(10, 'x'));
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_EQ(parser.bodyBytesCommitted(), 200000u);
  for (size_t sent = 10; sent < 200000; sent += 10000) {
    buf.append(std::string(std::min<size_t>(10000, 200000 - sent), 'x'));
    (void)parser.parse(&buf);
    EXPECT_EQ(parser.bodyBytesCommitted(), 200000u);
  }
  ASSERT_EQ(parser.request().body().size(), 200000u);
  // Grown toward the announced length, not past it: doubling from the
  // initial 64 KiB would have reached 256 KiB.
  EXPECT_LT(parser.request().body().capacity(), 256u * 1024);

  parser.reset();
  EXPECT_EQ(parser.bodyBytesCommitted(), 0u);
  buf.append(post("Transfer-Encoding: chunked\r\n"));
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_EQ(parser.bodyBytesCommitted(), 0u);
  buf.append("400\r\n" + std::string(100, 'c'));
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_EQ(parser.bodyBytesCommitted(), 1024u);  // the announced chunk, not the bytes so far
  buf.append(std::string(924, 'c') + "\r\n10\r\n");
  EXPECT_EQ(parser.parse(&buf), Result::kNeedMore);
  EXPECT_EQ(parser.bodyBytesCommitted(), 1040u);
  buf.append(std::string(16, 'd') + "\r\n0\r\n\r\n");
  EXPECT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(parser.bodyBytesCommitted(), 1040u);
  EXPECT_EQ(parser.request().body().size(), 1040u);
}

TEST(HttpParserTest, ResetKeepsStringCapacity) {
  HttpParser parser;
  Buffer buf;
  const std::string longValue(200, 'v');
  buf.append(post("X-Long: " + longValue + "\r\nContent-Length: 500\r\n", std::string(500, 'b')));
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  parser.reset();
  EXPECT_EQ(parser.request().body(), "");
  EXPECT_TRUE(parser.request().headers().empty());
  EXPECT_EQ(parser.request().target(), "");
  EXPECT_GE(parser.request().body().capacity(), 500u);

  buf.append(get("/", "X-Short: s\r\n"));
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  // Every field of the new request reuses the strings of an old one; a new
  // short string would have only the small-string capacity.
  size_t largest = 0;
  for (const auto& [name, value] : parser.request().headers()) {
    largest = std::max(largest, value.capacity());
  }
  EXPECT_GE(largest, longValue.size());
  EXPECT_EQ(parser.request().header("X-Short"), "s");
  EXPECT_EQ(parser.request().headers().size(), 2u);
}

TEST(HttpParserTest, ResetFreesALargeBody) {
  HttpParser parser;
  Buffer buf;
  buf.append(post("Content-Length: 200000\r\n", std::string(200000, 'b')));
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  ASSERT_GE(parser.request().body().capacity(), 200000u);
  parser.reset();
  EXPECT_LE(parser.request().body().capacity(), 64u * 1024);
}

TEST(HttpParserTest, CopiesAreIndependentValues) {
  HttpParser parser;
  Buffer buf;
  buf.append(post("X-A: 1\r\nContent-Length: 2\r\n", "ab") + get("/next?n", "X-B: 2\r\n"));
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  const HttpRequest first = parser.request();
  parser.reset();
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  HttpRequest assigned;
  assigned = parser.request();
  parser.reset();
  EXPECT_EQ(first.method(), Method::kPost);
  EXPECT_EQ(first.body(), "ab");
  EXPECT_EQ(first.header("x-a"), "1");
  EXPECT_EQ(first.headers().size(), 3u);
  EXPECT_EQ(assigned.path(), "/next");
  EXPECT_EQ(assigned.query(), "n");
  EXPECT_EQ(assigned.header("X-B"), "2");
  EXPECT_FALSE(assigned.header("X-A").has_value());
  EXPECT_EQ(snapshot(assigned), snapshot(HttpRequest(assigned)));
}

TEST(HttpParserTest, ClearEmptiesTheRequest) {
  HttpParser parser;
  Buffer buf;
  buf.append("PUT /x?y HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nz");
  ASSERT_EQ(parser.parse(&buf), Result::kComplete);
  HttpRequest copy = parser.request();
  EXPECT_EQ(copy.method(), Method::kPut);
  EXPECT_TRUE(copy.keepAlive());
  copy.clear();
  EXPECT_EQ(copy.method(), Method::kGet);
  EXPECT_EQ(copy.version(), Version::kHttp11);
  EXPECT_EQ(copy.target(), "");
  EXPECT_EQ(copy.path(), "");
  EXPECT_EQ(copy.query(), "");
  EXPECT_EQ(copy.body(), "");
  EXPECT_TRUE(copy.headers().empty());
  EXPECT_FALSE(copy.header("Connection").has_value());
  // The parser's own request is untouched by clearing a copy.
  EXPECT_EQ(parser.request().body(), "z");
}

// Damaged variants of a valid pipeline: whatever the verdict, it must not
// depend on how the bytes were split, and nothing may crash.
TEST(HttpParserTest, MutatedInputsGiveTheSameVerdictEverySplit) {
  const std::string base =
      post("Content-Length: 5\r\n", "hello") +
      post("Transfer-Encoding: chunked\r\n", "3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\n") +
      get("/q?a=b", "Connection: keep-alive, Upgrade\r\n");
  const char noise[] = {'\r', '\n', ' ', '\t', ':', ';', '0', 'f', 'G', '\0', '\x7f', ','};
  Limits limits;
  limits.maxHeaderBytes = 128;
  limits.maxBodyBytes = 64;
  std::mt19937 rng(2024);
  int errors = 0;
  for (int i = 0; i < 60; ++i) {
    const std::string input =
        test::mutated(base, std::string_view(noise, sizeof noise), /*cut=*/false, rng);
    SCOPED_TRACE(testing::PrintToString(input));
    const Outcome o = parseAllWays(input, limits);
    errors += o.error ? 1 : 0;
  }
  // The mutations are not all harmless: some must have been rejected.
  EXPECT_GT(errors, 10);
}

// Stopping at the head (HttpServer's router) and streaming the body in
// pieces: the pieces, fed a byte at a time or whole, join to the payload;
// the next request waits behind; the bounds move from maxBodyBytes to
// streamBody()'s.
std::string streamAll(std::string_view input, size_t step, uint64_t max, Result* last,
                      std::string* rest) {
  HttpParser parser(Limits{.maxBodyBytes = 4});
  parser.setStopAfterHead(true);
  Buffer buf;
  std::string body;
  size_t pos = 0;
  for (;;) {
    const Result r = parser.parse(&buf);
    if (r == Result::kHead) {
      parser.streamBody(max);
      continue;
    }
    if (r == Result::kPiece) {
      body.append(parser.piece(buf));
      parser.takePiece(&buf);
      continue;
    }
    if (r == Result::kNeedMore && pos < input.size()) {
      buf.append(input.substr(pos, step));
      pos += step;
      continue;
    }
    *last = r;
    break;
  }
  *rest = std::string(buf.view()) + std::string(input.substr(std::min(pos, input.size())));
  return body;
}

TEST(HttpParserTest, StreamedBodiesComeInPiecesWhateverTheSplit) {
  const std::string chunked =
      "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1;x=y\r\n \r\n5\r\nworld\r\n0\r\nT: v\r\n\r\nGET /next";
  const std::string length =
      "POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello worldGET";
  for (const size_t step : {size_t{1}, size_t{3}, size_t{1000}}) {
    Result last;
    std::string rest;
    EXPECT_EQ(streamAll(chunked, step, 0, &last, &rest), "hello world") << step;
    EXPECT_EQ(last, Result::kComplete);
    EXPECT_EQ(rest.substr(0, 3), "GET");
    EXPECT_EQ(streamAll(length, step, 11, &last, &rest), "hello world") << step;
    EXPECT_EQ(last, Result::kComplete);
    EXPECT_EQ(rest.substr(0, 3), "GET");
  }
}

TEST(HttpParserTest, StreamedBodyBoundsAndAPieceLeftInPlace) {
  Result last;
  std::string rest;
  // Past streamBody()'s bound: 413 by Content-Length, and mid-chunks.
  streamAll("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", 100, 10, &last, &rest);
  EXPECT_EQ(last, Result::kError);
  (void)streamAll(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n", 100,
      10, &last, &rest);
  EXPECT_EQ(last, Result::kError);

  // A piece not taken stays at the front and grows with what arrives.
  HttpParser parser;
  parser.setStopAfterHead(true);
  Buffer buf;
  buf.append("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\nab");
  ASSERT_EQ(parser.parse(&buf), Result::kHead);
  EXPECT_EQ(parser.announcedLength(), 6);
  EXPECT_EQ(parser.parse(&buf), Result::kHead);  // waits for the mode
  parser.streamBody(0);
  ASSERT_EQ(parser.parse(&buf), Result::kPiece);
  EXPECT_EQ(parser.piece(buf), "ab");
  buf.append("cdefGET");
  ASSERT_EQ(parser.parse(&buf), Result::kPiece);
  EXPECT_EQ(parser.piece(buf), "abcdef");
  parser.takePiece(&buf);
  EXPECT_EQ(parser.streamedBytes(), 6u);
  EXPECT_EQ(parser.parse(&buf), Result::kComplete);
  EXPECT_EQ(buf.view(), "GET");

  // readBodyWhole() keeps maxBodyBytes, judged after the head.
  HttpParser whole(Limits{.maxBodyBytes = 4});
  whole.setStopAfterHead(true);
  Buffer big;
  big.append("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n");
  ASSERT_EQ(whole.parse(&big), Result::kHead);
  whole.readBodyWhole();
  EXPECT_EQ(whole.parse(&big), Result::kError);
  EXPECT_EQ(whole.errorStatus(), 413);
}

}  // namespace
}  // namespace libnet::http
