#include "net/websocket/Handshake.h"

#include <gtest/gtest.h>

#include <string>

#include "net/Buffer.h"
#include "net/http/HttpParser.h"

namespace libnet::ws {
namespace {

// RFC 6455 1.3's sample request, with `replace` applied line by line.
http::HttpRequest parse(const std::string& head) {
  http::HttpParser parser;
  Buffer buf;
  buf.append(head);
  EXPECT_EQ(parser.parse(&buf), http::HttpParser::Result::kComplete) << head;
  return parser.request();
}

std::string sampleRequest(std::string requestLine = "GET /chat HTTP/1.1",
                          std::string extra =
                              "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                              "Sec-WebSocket-Version: 13\r\n",
                          std::string key = "dGhlIHNhbXBsZSBub25jZQ==") {
  return requestLine + "\r\nHost: server.example.com\r\n" + extra + "Sec-WebSocket-Key: " + key +
         "\r\nOrigin: http://example.com\r\n\r\n";
}

TEST(HandshakeTest, AcceptKeyRfcExample) {
  EXPECT_EQ(acceptKey("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_TRUE(checkAcceptKey("dGhlIHNhbXBsZSBub25jZQ==", " s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
  EXPECT_FALSE(checkAcceptKey("dGhlIHNhbXBsZSBub25jZQ==", "s3pPLMBiTxaQ9kYGzzhZRbK+xOp="));
}

TEST(HandshakeTest, NewClientKeysAreValidAndDistinct) {
  const std::string a = newClientKey();
  const std::string b = newClientKey();
  EXPECT_EQ(a.size(), 24u);
  EXPECT_NE(a, b);
  EXPECT_EQ(checkUpgradeRequest(parse(sampleRequest("GET / HTTP/1.1",
                                                    "Upgrade: websocket\r\n"
                                                    "Connection: Upgrade\r\n"
                                                    "Sec-WebSocket-Version: 13\r\n",
                                                    a)))
                .status,
            0);
}

TEST(HandshakeTest, AcceptsTheRfcRequestAndVariants) {
  EXPECT_EQ(checkUpgradeRequest(parse(sampleRequest())).status, 0);
  const http::HttpRequest mixed =
      parse(sampleRequest("GET /chat HTTP/1.1",
                          "Upgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
                          "Sec-WebSocket-Version: 13\r\n"));
  EXPECT_EQ(checkUpgradeRequest(mixed).status, 0);
  EXPECT_TRUE(isUpgradeRequest(mixed));
}

TEST(HandshakeTest, RejectsBadRequests) {
  const std::string headers = "Upgrade: websocket\r\nConnection: Upgrade\r\n";
  struct Case {
    std::string head;
    int status;
  };
  const Case cases[] = {
      {sampleRequest("POST /chat HTTP/1.1"), 405},
      {sampleRequest("GET /chat HTTP/1.0"), 400},
      {sampleRequest("GET /chat HTTP/1.1", "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"),
       400},
      {sampleRequest(
           "GET /chat HTTP/1.1",
           "Upgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Version: 13\r\n"),
       400},
      {sampleRequest("GET /chat HTTP/1.1", headers + "Sec-WebSocket-Version: 8\r\n"), 426},
      {sampleRequest("GET /chat HTTP/1.1", headers), 426},
      {sampleRequest("GET /chat HTTP/1.1", headers + "Sec-WebSocket-Version: 13\r\n", "abc"), 400},
      {sampleRequest("GET /chat HTTP/1.1", headers + "Sec-WebSocket-Version: 13\r\n",
                     "dGhlIHNhbXBsZSBub25jZQ"),
       400},
      {sampleRequest("GET /chat HTTP/1.1", headers + "Sec-WebSocket-Version: 13\r\n",
                     "dGhlIHNhbXBsZSBub25jZR=="),
       400},
      {sampleRequest("GET /chat HTTP/1.1", headers + "Sec-WebSocket-Version: 13\r\n",
                     "dGhlIHNhbXBsZSBub2*jZQ=="),
       400},
  };
  for (const Case& c : cases) {
    UpgradeCheck check = checkUpgradeRequest(parse(c.head));
    EXPECT_EQ(check.status, c.status) << c.head;
    EXPECT_FALSE(check.reason.empty()) << c.head;
  }
  UpgradeCheck version = checkUpgradeRequest(parse(cases[4].head));
  ASSERT_EQ(version.headers.size(), 1u);
  EXPECT_EQ(version.headers[0].first, "Sec-WebSocket-Version");
  EXPECT_EQ(version.headers[0].second, "13");
}

TEST(HandshakeTest, IsUpgradeRequest) {
  EXPECT_TRUE(isUpgradeRequest(parse(sampleRequest())));
  EXPECT_FALSE(isUpgradeRequest(parse("GET / HTTP/1.1\r\nHost: x\r\n\r\n")));
  EXPECT_FALSE(isUpgradeRequest(parse("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\n")));
}

TEST(HandshakeTest, UpgradeResponseHead) {
  EXPECT_EQ(makeUpgradeResponse("dGhlIHNhbXBsZSBub25jZQ=="),
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
  const std::string withExtras =
      makeUpgradeResponse("dGhlIHNhbXBsZSBub25jZQ==", "permessage-deflate", "chat");
  EXPECT_NE(withExtras.find("\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"),
            std::string::npos);
  EXPECT_NE(withExtras.find("\r\nSec-WebSocket-Protocol: chat\r\n"), std::string::npos);
  EXPECT_TRUE(withExtras.ends_with("\r\n\r\n"));
}

TEST(HandshakeTest, ClientRequestPassesTheServerCheck) {
  const std::string key = newClientKey();
  const http::HttpRequest request =
      parse(makeUpgradeRequest("example.com:8080", "/ws?x=1", key, "permessage-deflate", "chat"));
  EXPECT_EQ(checkUpgradeRequest(request).status, 0);
  EXPECT_EQ(request.target(), "/ws?x=1");
  EXPECT_EQ(request.header("Host"), "example.com:8080");
  EXPECT_EQ(request.header("Sec-WebSocket-Key"), key);
  EXPECT_EQ(request.header("Sec-WebSocket-Extensions"), "permessage-deflate");
  EXPECT_EQ(request.header("Sec-WebSocket-Protocol"), "chat");
}

}  // namespace
}  // namespace libnet::ws
