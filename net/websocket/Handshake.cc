#include "net/websocket/Handshake.h"

#include <openssl/evp.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace libnet::ws {

namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

std::string base64(const unsigned char* data, size_t length) {
  std::string out(4 * ((length + 2) / 3), '\0');
  const int n =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(length));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether any field named `name` lists `token` among its comma-separated
// values (ASCII case-insensitive).
bool hasToken(const http::HttpRequest& request, std::string_view name, std::string_view token) {
  for (const auto& [fieldName, value] : request.headers()) {
    if (!equalsIgnoreCase(fieldName, name)) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      if (equalsIgnoreCase(trim(rest.substr(0, comma)), token)) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

bool isBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

// The base64 encoding of 16 bytes: 22 characters and "==", the last
// character carrying only 2 bits (so one of "AQgw").
bool isValidKey(std::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  if (!std::all_of(key.begin(), key.begin() + 22, isBase64Char)) return false;
  return std::string_view("AQgw").find(key[21]) != std::string_view::npos;
}

}  // namespace

std::string acceptKey(std::string_view secWebSocketKey) {
  std::string input(secWebSocketKey);
  input += kGuid;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digestLength = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &digestLength, EVP_sha1(), nullptr) != 1) {
    throw std::runtime_error("EVP_Digest(SHA-1) failed");
  }
  return base64(digest, digestLength);
}

std::string newClientKey() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::system_category(), "getrandom");
    }
    got += static_cast<size_t>(n);
  }
  return base64(bytes, sizeof bytes);
}

bool isUpgradeRequest(const http::HttpRequest& request) {
  return hasToken(request, "Upgrade", "websocket");
}

UpgradeCheck checkUpgradeRequest(const http::HttpRequest& request) {
  UpgradeCheck check;
  auto reject = [&check](int status, const char* reason) {
    check.status = status;
    check.reason = reason;
    return check;
  };
  if (request.method() != http::Method::kGet) {
    check.headers.emplace_back("Allow", "GET");
    return reject(405, "a WebSocket handshake is a GET");
  }
  if (request.version() != http::Version::kHttp11) {
    return reject(400, "a WebSocket handshake needs HTTP/1.1");
  }
  if (!hasToken(request, "Upgrade", "websocket")) return reject(400, "Upgrade: websocket missing");
  if (!hasToken(request, "Connection", "upgrade"))
    return reject(400, "Connection: upgrade missing");
  std::optional<std::string_view> version = request.header("Sec-WebSocket-Version");
  if (!version || *version != "13") {
    check.headers.emplace_back("Sec-WebSocket-Version", "13");
    return reject(426, "unsupported Sec-WebSocket-Version (13 is)");
  }
  std::optional<std::string_view> key = request.header("Sec-WebSocket-Key");
  if (!key || !isValidKey(*key)) return reject(400, "invalid Sec-WebSocket-Key");
  return check;
}

std::string makeUpgradeResponse(std::string_view secWebSocketKey, std::string_view extensions,
                                std::string_view subprotocol) {
  std::string head =
      "HTTP/1.1 101 Switching Protocols\r\n"
      "Upgrade: websocket\r\n"
      "Connection: Upgrade\r\n"
      "Sec-WebSocket-Accept: ";
  head += acceptKey(trim(secWebSocketKey));
  head += "\r\n";
  if (!extensions.empty()) head.append("Sec-WebSocket-Extensions: ").append(extensions) += "\r\n";
  if (!subprotocol.empty()) head.append("Sec-WebSocket-Protocol: ").append(subprotocol) += "\r\n";
  head += "\r\n";
  return head;
}

std::string makeUpgradeRequest(std::string_view host, std::string_view target, std::string_view key,
                               std::string_view extensions, std::string_view subprotocols) {
  std::string head("GET ");
  head.append(target.empty() ? "/" : target) += " HTTP/1.1\r\nHost: ";
  head.append(host) +=
      "\r\n"
      "Upgrade: websocket\r\n"
      "Connection: Upgrade\r\n"
      "Sec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Key: ";
  head.append(key) += "\r\n";
  if (!extensions.empty()) head.append("Sec-WebSocket-Extensions: ").append(extensions) += "\r\n";
  if (!subprotocols.empty()) {
    head.append("Sec-WebSocket-Protocol: ").append(subprotocols) += "\r\n";
  }
  head += "\r\n";
  return head;
}

bool checkAcceptKey(std::string_view secWebSocketKey, std::string_view secWebSocketAccept) {
  return acceptKey(trim(secWebSocketKey)) == trim(secWebSocketAccept);
}

}  // namespace libnet::ws
