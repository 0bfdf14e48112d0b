// The CGI/1.1 variables of a request: nginx's fastcgi.conf set, HTTP_* from
// the fields (httpoxy and underscore names left out, repeats joined), and
// the path decoded with ".." refused.
#include "net/fastcgi/CgiParams.h"

#include <gtest/gtest.h>

#include <map>

namespace libnet::fastcgi {
namespace {

std::map<std::string, std::string> asMap(const ParamList& params) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : params) {
    EXPECT_TRUE(out.emplace(name, value).second) << "sent twice: " << name;
  }
  return out;
}

CgiContext srvContext() {
  CgiContext context;
  context.documentRoot = "/srv";
  return context;
}

http::HttpRequest request(http::Method method, std::string_view target) {
  http::HttpRequest r;
  EXPECT_EQ(r.assign(method, http::Version::kHttp11, target), 0);
  return r;
}

TEST(CgiParamsTest, TheFastcgiConfSet) {
  http::HttpRequest r = request(http::Method::kPost, "/app/a%20b.php?x=1&y=%41");
  r.appendHeader("Host", "example.com:8080");
  r.appendHeader("Content-Type", "application/x-www-form-urlencoded");
  r.appendHeader("Content-Length", "3");
  r.appendHeader("User-Agent", "t/1");
  r.body() = "a=b";
  CgiContext context;
  context.documentRoot = "/srv/www";
  context.https = true;
  context.local = SocketAddress(InetAddress("127.0.0.1", 8443));
  context.peer = SocketAddress(InetAddress("127.0.0.2", 50000));
  const auto p = asMap(*cgiParams(r, context));
  EXPECT_EQ(p.at("SCRIPT_FILENAME"), "/srv/www/app/a b.php");
  EXPECT_EQ(p.at("SCRIPT_NAME"), "/app/a b.php");
  EXPECT_EQ(p.at("DOCUMENT_URI"), "/app/a b.php");
  EXPECT_EQ(p.at("DOCUMENT_ROOT"), "/srv/www");
  EXPECT_EQ(p.at("REQUEST_URI"), "/app/a%20b.php?x=1&y=%41");
  EXPECT_EQ(p.at("QUERY_STRING"), "x=1&y=%41");
  EXPECT_EQ(p.at("REQUEST_METHOD"), "POST");
  EXPECT_EQ(p.at("CONTENT_TYPE"), "application/x-www-form-urlencoded");
  EXPECT_EQ(p.at("CONTENT_LENGTH"), "3");
  EXPECT_EQ(p.at("SERVER_PROTOCOL"), "HTTP/1.1");
  EXPECT_EQ(p.at("REQUEST_SCHEME"), "https");
  EXPECT_EQ(p.at("HTTPS"), "on");
  EXPECT_EQ(p.at("GATEWAY_INTERFACE"), "CGI/1.1");
  EXPECT_EQ(p.at("SERVER_SOFTWARE").rfind("libnet/", 0), 0u);
  EXPECT_EQ(p.at("REMOTE_ADDR"), "127.0.0.2");
  EXPECT_EQ(p.at("REMOTE_PORT"), "50000");
  EXPECT_EQ(p.at("SERVER_ADDR"), "127.0.0.1");
  EXPECT_EQ(p.at("SERVER_PORT"), "8443");
  EXPECT_EQ(p.at("SERVER_NAME"), "example.com");
  EXPECT_EQ(p.at("REDIRECT_STATUS"), "200");
  EXPECT_EQ(p.at("HTTP_HOST"), "example.com:8080");
  EXPECT_EQ(p.at("HTTP_USER_AGENT"), "t/1");
  EXPECT_EQ(p.count("HTTP_CONTENT_TYPE") + p.count("HTTP_CONTENT_LENGTH"), 0u);
}

TEST(CgiParamsTest, NoBodyNoTlsAndAFrontController) {
  http::HttpRequest r = request(http::Method::kGet, "/any/path");
  CgiContext context;
  context.documentRoot = "/srv";
  context.scriptFilename = "/srv/index.php";
  context.serverName = "site";
  const auto p = asMap(*cgiParams(r, context));
  EXPECT_EQ(p.at("SCRIPT_FILENAME"), "/srv/index.php");
  EXPECT_EQ(p.at("CONTENT_LENGTH"), "");
  EXPECT_EQ(p.at("QUERY_STRING"), "");
  EXPECT_EQ(p.at("REQUEST_SCHEME"), "http");
  EXPECT_EQ(p.count("HTTPS"), 0u);
  EXPECT_EQ(p.at("SERVER_NAME"), "site");
}

TEST(CgiParamsTest, FieldsMappedFilteredAndJoined) {
  http::HttpRequest r = request(http::Method::kGet, "/x.php");
  r.appendHeader("Proxy", "http://evil:1");
  r.appendHeader("X_Forwarded_For", "spoof");
  r.appendHeader("X.Odd", "1");
  r.appendHeader("Transfer-Encoding", "chunked");
  r.appendHeader("Accept", "a");
  r.appendHeader("accept", "b");
  r.appendHeader("Cookie", "c=1");
  r.appendHeader("Cookie", "d=2");
  r.appendHeader("x-forwarded-for", "10.0.0.1");
  const auto p = asMap(*cgiParams(r, srvContext()));
  EXPECT_EQ(p.count("HTTP_PROXY"), 0u);
  EXPECT_EQ(p.count("HTTP_TRANSFER_ENCODING"), 0u);
  EXPECT_EQ(p.at("HTTP_X_FORWARDED_FOR"), "10.0.0.1");
  EXPECT_EQ(p.at("HTTP_ACCEPT"), "a, b");
  EXPECT_EQ(p.at("HTTP_COOKIE"), "c=1; d=2");
  for (const auto& [name, value] : p) EXPECT_EQ(name.find('.'), std::string::npos);
}

TEST(CgiParamsTest, PathsDecodedAndDotDotRefused) {
  EXPECT_EQ(decodeScriptPath("/a//b/./c.php"), "/a/b/c.php");
  EXPECT_EQ(decodeScriptPath("/"), "/");
  EXPECT_EQ(decodeScriptPath("/dir/"), "/dir/");
  EXPECT_EQ(decodeScriptPath("/%7euser/i.php"), "/~user/i.php");
  EXPECT_EQ(decodeScriptPath("/../etc/passwd"), std::nullopt);
  EXPECT_EQ(decodeScriptPath("/a/%2e%2e/b.php"), std::nullopt);
  EXPECT_EQ(decodeScriptPath("/a%00.php"), std::nullopt);
  EXPECT_EQ(decodeScriptPath("/a%2"), std::nullopt);
  EXPECT_EQ(decodeScriptPath("/a%zz"), std::nullopt);
  http::HttpRequest r = request(http::Method::kGet, "/a/../../x.php");
  EXPECT_FALSE(cgiParams(r, srvContext()).has_value());
}

TEST(CgiParamsTest, Http2IsHttp20) {
  http::HttpRequest r;
  ASSERT_EQ(r.assign(http::Method::kGet, http::Version::kHttp2, "/i.php"), 0);
  EXPECT_EQ(asMap(*cgiParams(r, srvContext())).at("SERVER_PROTOCOL"), "HTTP/2.0");
}

}  // namespace
}  // namespace libnet::fastcgi
