// The CGI response head from FCGI_STDOUT: status, Location, Content-Type,
// fields passed on and framing fields dropped, fed in any pieces; strict on
// malformed heads and the size limit.
#include "net/fastcgi/CgiResponseParser.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace libnet::fastcgi {
namespace {

struct Parsed {
  CgiResponseParser::Status status = CgiResponseParser::Status::kNeedMore;
  http::HttpResponse head{false};
  std::string body;
  std::string error;
};

Parsed parse(std::string_view text, size_t step = 1 << 20, size_t limit = 64 * 1024) {
  CgiResponseParser parser(limit);
  Parsed out;
  while (!text.empty()) {
    std::string_view piece = text.substr(0, step);
    text.remove_prefix(piece.size());
    out.status = parser.feed(&piece);
    if (out.status == CgiResponseParser::Status::kError) {
      out.error = parser.error();
      return out;
    }
    if (out.status == CgiResponseParser::Status::kDone) {
      out.body = std::string(piece) + std::string(text);
      out.head = parser.takeHead();
      return out;
    }
    EXPECT_TRUE(piece.empty());
  }
  return out;
}

std::multimap<std::string, std::string> fields(const http::HttpResponse& head) {
  std::multimap<std::string, std::string> out;
  head.forEachHeader([&](std::string_view n, std::string_view v) { out.emplace(n, v); });
  return out;
}

TEST(CgiResponseParserTest, StatusTypeAndFieldsInAnyPieces) {
  const std::string text =
      "Status: 404 Not Here\r\nContent-Type: text/html; charset=UTF-8\r\n"
      "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Powered-By: PHP/8.2\r\n"
      "Content-Length: 99\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
      "Date: Mon, 01 Jan 2001 00:00:00 GMT\r\n\r\nbody\r\n\r\nmore";
  for (size_t step : {size_t{1}, size_t{3}, size_t{1000}}) {
    Parsed p = parse(text, step);
    ASSERT_EQ(p.status, CgiResponseParser::Status::kDone) << p.error;
    EXPECT_EQ(p.head.status(), 404);
    EXPECT_EQ(p.head.reason(), "Not Here");
    EXPECT_EQ(p.head.contentType(), "text/html; charset=UTF-8");
    const auto f = fields(p.head);
    EXPECT_EQ(f.count("Set-Cookie"), 2u);
    EXPECT_EQ(f.count("X-Powered-By"), 1u);
    EXPECT_EQ(f.count("Content-Length") + f.count("Transfer-Encoding") + f.count("Connection") +
                  f.count("Date") + f.count("Status"),
              0u);
    EXPECT_EQ(p.body, "body\r\n\r\nmore");
  }
}

TEST(CgiResponseParserTest, DefaultsAndRedirects) {
  Parsed plain = parse("Content-type: text/plain\n\nhi");
  ASSERT_EQ(plain.status, CgiResponseParser::Status::kDone);
  EXPECT_EQ(plain.head.status(), 200);
  EXPECT_EQ(plain.head.reason(), "OK");
  EXPECT_EQ(plain.body, "hi");

  Parsed redirect = parse("Location: /elsewhere\r\n\r\n");
  ASSERT_EQ(redirect.status, CgiResponseParser::Status::kDone);
  EXPECT_EQ(redirect.head.status(), 302);
  EXPECT_EQ(fields(redirect.head).count("Location"), 1u);

  Parsed moved = parse("Status: 301\r\nLocation: https://x/\r\n\r\n");
  ASSERT_EQ(moved.status, CgiResponseParser::Status::kDone);
  EXPECT_EQ(moved.head.status(), 301);
  EXPECT_EQ(moved.head.reason(), "Moved Permanently");
}

TEST(CgiResponseParserTest, MalformedHeadsAreErrors) {
  for (const char* text :
       {"no colon here\r\n\r\n", ": empty name\r\n\r\n", "Bad Name: x\r\n\r\n",
        "Status: 2000\r\n\r\n", "Status: abc\r\n\r\n", "Status: 99\r\n\r\n",
        "Status: 600 Big\r\n\r\n", "Status: 200\r\nStatus: 404\r\n\r\n", "A: b\r\n folded\r\n\r\n",
        "A: b\x01\r\n\r\n", "HTTP/1.1 200 OK\r\n\r\n"}) {
    Parsed p = parse(text);
    EXPECT_EQ(p.status, CgiResponseParser::Status::kError) << text;
    EXPECT_FALSE(p.error.empty()) << text;
  }
}

TEST(CgiResponseParserTest, HeadLimitCountsEveryByteAndWaitsForMore) {
  const std::string line = "X-A: " + std::string(90, 'a') + "\r\n";  // 97 bytes
  std::string head;
  for (int i = 0; i < 10; ++i) head += line;
  EXPECT_EQ(parse(head + "\r\n", 7, 972).status, CgiResponseParser::Status::kDone);
  EXPECT_EQ(parse(head + "\r\n", 7, 971).status, CgiResponseParser::Status::kError);
  // A line that never ends is bounded too.
  EXPECT_EQ(parse(std::string(5000, 'x'), 100, 4096).status, CgiResponseParser::Status::kError);
  EXPECT_EQ(parse(head, 7).status, CgiResponseParser::Status::kNeedMore);
}

}  // namespace
}  // namespace libnet::fastcgi
