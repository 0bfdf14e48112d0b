#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "net/Buffer.h"
#include "net/http/HttpResponse.h"

namespace libnet::http {
namespace {

constexpr std::string_view kDate = "Sun, 06 Nov 1994 08:49:37 GMT";

std::string serialize(const HttpResponse& response, std::string_view date = kDate,
                      bool headOnly = false) {
  Buffer out;
  response.appendToBuffer(&out, date, headOnly);
  return std::string(out.view());
}

TEST(HttpResponseTest, FullResponse) {
  HttpResponse response(false);
  response.setContentType("text/plain; charset=utf-8");
  response.addHeader("Cache-Control", "no-cache");
  response.addHeader("X-Two", "2");
  response.setBody("hello");
  EXPECT_EQ(serialize(response),
            "HTTP/1.1 200 OK\r\n"
            "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            "Cache-Control: no-cache\r\n"
            "X-Two: 2\r\n"
            "Content-Length: 5\r\n"
            "\r\n"
            "hello");
}

TEST(HttpResponseTest, ContentLengthIsAlwaysPresent) {
  const HttpResponse empty(false);
  EXPECT_EQ(serialize(empty),
            "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 0\r\n\r\n");

  HttpResponse notFound(false);
  notFound.setStatus(404);
  EXPECT_NE(serialize(notFound).find("\r\nContent-Length: 0\r\n"), std::string::npos);

  HttpResponse big(false);
  big.setBody(std::string(123456, 'x'));
  const std::string text = serialize(big);
  EXPECT_NE(text.find("\r\nContent-Length: 123456\r\n\r\n"), std::string::npos);
  EXPECT_EQ(text.size(), text.find("\r\n\r\n") + 4 + 123456);
}

TEST(HttpResponseTest, HeadHasSameHeadButNoBody) {
  HttpResponse response(false);
  response.setContentType("text/html");
  response.setBody("<p>hi</p>");
  const std::string get = serialize(response);
  const std::string head = serialize(response, kDate, /*headOnly=*/true);
  EXPECT_NE(head.find("Content-Length: 9\r\n"), std::string::npos);
  EXPECT_EQ(get, head + "<p>hi</p>");
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
}

TEST(HttpResponseTest, ConnectionHeader) {
  HttpResponse closing(true);
  EXPECT_TRUE(closing.closeConnection());
  const std::string text = serialize(closing);
  EXPECT_NE(text.find("\r\nConnection: close\r\n"), std::string::npos);
  EXPECT_EQ(text.find("keep-alive"), std::string::npos);

  HttpResponse open(false);
  EXPECT_FALSE(open.closeConnection());
  EXPECT_EQ(serialize(open).find("Connection:"), std::string::npos);

  // An HTTP/1.0 keep-alive client needs to be told.
  open.setKeepAliveHeader(true);
  EXPECT_NE(serialize(open).find("\r\nConnection: keep-alive\r\n"), std::string::npos);

  // Closing wins over the keep-alive header.
  open.setCloseConnection(true);
  EXPECT_TRUE(open.closeConnection());
  EXPECT_NE(serialize(open).find("\r\nConnection: close\r\n"), std::string::npos);
  EXPECT_EQ(serialize(open).find("keep-alive"), std::string::npos);
  open.setCloseConnection(false);
  EXPECT_EQ(serialize(open).find("close"), std::string::npos);
}

TEST(HttpResponseTest, DateLine) {
  const HttpResponse response(false);
  const std::string text = serialize(response, "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(text.find("Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n"),
            std::string("HTTP/1.1 200 OK\r\n").size());
  // No date given, no Date line.
  EXPECT_EQ(serialize(response, "").find("Date"), std::string::npos);
}

TEST(HttpResponseTest, AnnouncedContentLengthForBodySentSeparately) {
  HttpResponse response(false);
  response.setContentType("application/octet-stream");
  response.setContentLength(1048576);
  EXPECT_EQ(response.contentLength(), 1048576u);
  const std::string text = serialize(response);
  EXPECT_NE(text.find("\r\nContent-Length: 1048576\r\n"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 4), "\r\n\r\n");  // the head only

  // setBody() replaces the announcement, setContentLength() drops the body.
  response.setBody("abc");
  EXPECT_EQ(response.contentLength(), 3u);
  EXPECT_EQ(serialize(response).substr(serialize(response).size() - 7), "\r\n\r\nabc");
  response.setContentLength(10);
  EXPECT_EQ(response.body(), "");
  EXPECT_NE(serialize(response).find("Content-Length: 10\r\n\r\n"), std::string::npos);
  response.setContentLength(0);
  EXPECT_NE(serialize(response).find("Content-Length: 0\r\n"), std::string::npos);
}

TEST(HttpResponseTest, ReasonPhrases) {
  const std::pair<int, std::string_view> expected[] = {
      {200, "OK"},
      {204, "No Content"},
      {206, "Partial Content"},
      {301, "Moved Permanently"},
      {304, "Not Modified"},
      {400, "Bad Request"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {413, "Content Too Large"},
      {414, "URI Too Long"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {505, "HTTP Version Not Supported"},
  };
  for (const auto& [code, reason] : expected) {
    SCOPED_TRACE(code);
    EXPECT_EQ(HttpResponse::reasonPhrase(code), reason);
    HttpResponse response(true);
    response.setStatus(code);
    EXPECT_EQ(response.status(), code);
    EXPECT_EQ(serialize(response).rfind(
                  "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) + "\r\n", 0),
              0u);
  }
}

TEST(HttpResponseTest, UnknownAndCustomReasons) {
  HttpResponse response(false);
  response.setStatus(299);
  EXPECT_EQ(response.reason(), "");
  // The space after the code stays: status-line = version SP code SP [reason].
  EXPECT_EQ(serialize(response).rfind("HTTP/1.1 299 \r\n", 0), 0u);
  response.setStatus(418, "I'm a teapot");
  EXPECT_EQ(serialize(response).rfind("HTTP/1.1 418 I'm a teapot\r\n", 0), 0u);
}

TEST(HttpResponseTest, NoContentLengthOrBodyFor204And1xx) {
  HttpResponse noContent(false);
  noContent.setStatus(204);
  noContent.setBody("ignored");
  EXPECT_EQ(serialize(noContent),
            "HTTP/1.1 204 No Content\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n");

  HttpResponse cont(false);
  cont.setStatus(100);
  EXPECT_EQ(serialize(cont, ""), "HTTP/1.1 100 Continue\r\n\r\n");
}

TEST(HttpResponseTest, NotModifiedKeepsLengthDropsBody) {
  HttpResponse response(false);
  response.setStatus(304);
  response.setBody("cached body");
  const std::string text = serialize(response);
  EXPECT_NE(text.find("Content-Length: 11\r\n"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 4), "\r\n\r\n");
}

TEST(HttpResponseTest, LineBreaksInFieldsCannotSplitTheResponse) {
  HttpResponse response(false);
  response.setStatus(301);
  response.addHeader("Location", "/a\r\nSet-Cookie: evil=1");
  response.addHeader("X-Na\nme", std::string("v\0x", 3));
  response.setContentType("text/html\r\n\r\n<script>");
  response.setStatus(302, "Found\r\nX: y");
  const std::string text = serialize(response);
  EXPECT_NE(text.find("Location: /a  Set-Cookie: evil=1\r\n"), std::string::npos);
  EXPECT_NE(text.find("X-Na me: v x\r\n"), std::string::npos);
  EXPECT_NE(text.find("Content-Type: text/html    <script>\r\n"), std::string::npos);
  EXPECT_EQ(text.rfind("HTTP/1.1 302 Found  X: y\r\n", 0), 0u);
  EXPECT_EQ(text.find("\nSet-Cookie"), std::string::npos);
  // Exactly one blank line, at the end of the head.
  EXPECT_EQ(text.find("\r\n\r\n"), text.size() - 4);
}

TEST(HttpResponseTest, ContentTypeIsReplaced) {
  HttpResponse response(false);
  response.setContentType("text/plain");
  response.setContentType("text/html");
  const std::string text = serialize(response);
  EXPECT_NE(text.find("Content-Type: text/html\r\n"), std::string::npos);
  EXPECT_EQ(text.find("text/plain"), std::string::npos);
}

TEST(HttpResponseTest, AppendsAfterExistingBytes) {
  Buffer out;
  out.append("previous response bytes|");
  HttpResponse first(false);
  first.setBody("one");
  first.appendToBuffer(&out, kDate);
  HttpResponse second(true);
  second.setBody("two");
  second.appendToBuffer(&out, kDate);
  const std::string text(out.view());
  EXPECT_EQ(text.rfind("previous response bytes|HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_NE(text.find("\r\n\r\noneHTTP/1.1 200 OK\r\n"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 3), "two");
}

}  // namespace
}  // namespace libnet::http
