#include "net/http/Url.h"

#include <gtest/gtest.h>

#include <string>

namespace libnet::http {
namespace {

Url parseOk(std::string_view text) {
  std::string error;
  std::optional<Url> url = Url::parse(text, &error);
  EXPECT_TRUE(url.has_value()) << text << ": " << error;
  return url.value_or(*Url::parse("http://invalid.test/"));
}

std::string parseError(std::string_view text) {
  std::string error;
  EXPECT_FALSE(Url::parse(text, &error).has_value()) << text;
  return error;
}

TEST(UrlTest, HttpDefaults) {
  const Url url = parseOk("http://Example.COM");
  EXPECT_EQ(url.scheme(), Url::Scheme::kHttp);
  EXPECT_FALSE(url.secure());
  EXPECT_EQ(url.host(), "example.com");
  EXPECT_EQ(url.port(), 80);
  EXPECT_EQ(url.target(), "/");
  EXPECT_EQ(url.hostPort(), "example.com:80");
  EXPECT_EQ(url.hostHeader(), "example.com");
  EXPECT_EQ(url.toString(), "http://example.com/");
}

TEST(UrlTest, SchemesAndDefaultPorts) {
  EXPECT_EQ(parseOk("https://h/").port(), 443);
  EXPECT_TRUE(parseOk("https://h/").secure());
  EXPECT_EQ(parseOk("ws://h/chat").port(), 80);
  EXPECT_EQ(parseOk("ws://h/chat").scheme(), Url::Scheme::kWs);
  EXPECT_EQ(parseOk("WSS://h/chat").port(), 443);
  EXPECT_TRUE(parseOk("wss://h/chat").secure());
  EXPECT_EQ(parseOk("HTTP://h:8080/").port(), 8080);
  EXPECT_EQ(parseOk("http://h:/").port(), 80);
}

TEST(UrlTest, TargetIsPathAndQueryWithoutFragment) {
  EXPECT_EQ(parseOk("http://h/a/b?x=1&y=2#frag").target(), "/a/b?x=1&y=2");
  EXPECT_EQ(parseOk("http://h?q=1").target(), "/?q=1");
  EXPECT_EQ(parseOk("http://h#top").target(), "/");
  EXPECT_EQ(parseOk("http://h/%20x").target(), "/%20x");
}

TEST(UrlTest, Ipv6Literal) {
  const Url url = parseOk("http://[::1]:8080/x");
  EXPECT_EQ(url.host(), "::1");
  EXPECT_TRUE(url.hostIsIpv6());
  EXPECT_EQ(url.port(), 8080);
  EXPECT_EQ(url.hostPort(), "[::1]:8080");
  EXPECT_EQ(url.hostHeader(), "[::1]:8080");
  EXPECT_EQ(parseOk("ws://[2001:db8::7]/").hostHeader(), "[2001:db8::7]");
  EXPECT_EQ(parseOk("http://127.0.0.1:9/").hostPort(), "127.0.0.1:9");
}

TEST(UrlTest, HostHeaderKeepsNonDefaultPort) {
  EXPECT_EQ(parseOk("https://h:443/").hostHeader(), "h");
  EXPECT_EQ(parseOk("https://h:80/").hostHeader(), "h:80");
  EXPECT_EQ(parseOk("http://h:8080/").origin(), "http://h:8080");
}

TEST(UrlTest, BadInput) {
  EXPECT_NE(parseError("example.com/x").find("scheme"), std::string::npos);
  EXPECT_NE(parseError("ftp://h/").find("scheme"), std::string::npos);
  EXPECT_NE(parseError("http://user:pw@h/").find("userinfo"), std::string::npos);
  EXPECT_NE(parseError("http://user@h/").find("userinfo"), std::string::npos);
  EXPECT_NE(parseError("http:///path").find("host"), std::string::npos);
  EXPECT_NE(parseError("http://:80/").find("host"), std::string::npos);
  EXPECT_NE(parseError("http://h:0/").find("port"), std::string::npos);
  EXPECT_NE(parseError("http://h:65536/").find("port"), std::string::npos);
  EXPECT_NE(parseError("http://h:8a/").find("port"), std::string::npos);
  EXPECT_NE(parseError("http://h:-1/").find("port"), std::string::npos);
  EXPECT_NE(parseError("http://[::1/").find("IPv6"), std::string::npos);
  EXPECT_NE(parseError("http://[zz::1]/").find("IPv6"), std::string::npos);
  EXPECT_NE(parseError("http://[::1]x/").find("IPv6"), std::string::npos);
  EXPECT_NE(parseError("http://[fe80::1%25eth0]/").find("IPv6"), std::string::npos);
  EXPECT_NE(parseError("http://h/a b").find("path"), std::string::npos);
  EXPECT_NE(parseError("http://h/\x01").find("path"), std::string::npos);
  EXPECT_NE(parseError("http://h/\xc3\xa9").find("path"), std::string::npos);
  EXPECT_NE(parseError("http://h h/").find("host"), std::string::npos);
  EXPECT_NE(parseError(" http://h/").find("scheme"), std::string::npos);
}

TEST(UrlTest, ResolveReferences) {
  const Url base = parseOk("http://h:8080/a/b/c?q=1");
  EXPECT_EQ(base.resolve("/x")->toString(), "http://h:8080/x");
  EXPECT_EQ(base.resolve("d?z=2")->toString(), "http://h:8080/a/b/d?z=2");
  EXPECT_EQ(base.resolve("?z=2")->toString(), "http://h:8080/a/b/c?z=2");
  EXPECT_EQ(base.resolve("https://other/y")->toString(), "https://other/y");
  EXPECT_EQ(base.resolve("//other:81/y")->toString(), "http://other:81/y");
  EXPECT_FALSE(base.resolve("http://u@h/").has_value());
}

}  // namespace
}  // namespace libnet::http
