#include "bench/websocket/WsClientProtocol.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <stdexcept>

namespace wsload {
namespace {

constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
constexpr std::string_view kDeflateTail("\x00\x00\xff\xff", 4);

std::string base64(const unsigned char* data, size_t n) {
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int length =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(n));
  out.resize(static_cast<size_t>(length));
  return out;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// The value of header `name` (lower case) in `head`, or nullopt-like "\n"
// when it is absent (a header value never holds a newline).
std::string headerValue(std::string_view head, std::string_view name) {
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const size_t start = pos + 2;
    const size_t end = head.find("\r\n", start);
    const std::string_view line = head.substr(start, end - start);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && lower(trim(line.substr(0, colon))) == name) {
      return std::string(trim(line.substr(colon + 1)));
    }
    pos = end;
  }
  return "\n";
}

uint32_t randomMask() {
  static std::random_device device;
  return device();
}

}  // namespace

std::string makeKey() {
  std::random_device device;
  unsigned char raw[16];
  for (unsigned char& byte : raw) byte = static_cast<unsigned char>(device());
  return base64(raw, sizeof raw);
}

std::string acceptFor(std::string_view key) {
  const std::string text = std::string(key) + std::string(kGuid);
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return base64(digest, sizeof digest);
}

std::string upgradeRequest(std::string_view host, uint16_t port, std::string_view key,
                           bool deflate) {
  std::string request = "GET / HTTP/1.1\r\nHost: " + std::string(host) + ":" +
                        std::to_string(port) +
                        "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " +
                        std::string(key) + "\r\n";
  if (deflate) {
    request +=
        "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
        "client_no_context_takeover\r\n";
  }
  return request + "\r\n";
}

std::string checkUpgradeResponse(std::string_view head, std::string_view key, bool deflate) {
  if (!head.starts_with("HTTP/1.1 101")) {
    return "no 101: " + std::string(head.substr(0, head.find("\r\n")));
  }
  if (lower(headerValue(head, "upgrade")) != "websocket") return "no Upgrade: websocket";
  if (lower(headerValue(head, "connection")).find("upgrade") == std::string::npos) {
    return "no Connection: Upgrade";
  }
  if (headerValue(head, "sec-websocket-accept") != acceptFor(key)) {
    return "wrong Sec-WebSocket-Accept";
  }
  const std::string extensions = lower(headerValue(head, "sec-websocket-extensions"));
  const bool negotiated = extensions.find("permessage-deflate") != std::string::npos;
  if (!deflate && negotiated) return "permessage-deflate answered but not offered";
  if (deflate && !negotiated) return "permessage-deflate offered but not accepted";
  // Every reply is inflated on its own: the server must not keep its context.
  if (deflate && extensions.find("server_no_context_takeover") == std::string::npos) {
    return "server_no_context_takeover offered but not accepted";
  }
  return "";
}

std::string makePayload(size_t size) {
  constexpr std::string_view kLine =
      "{\"id\":1234,\"user\":\"libnet\",\"tags\":[\"epoll\",\"io_uring\"],\"ok\":true}\n";
  std::string payload;
  payload.reserve(size + kLine.size());
  while (payload.size() < size) payload += kLine;
  payload.resize(size);
  return payload;
}

std::string maskedFrame(int opcode, bool compressed, std::string_view payload) {
  std::string frame;
  frame.push_back(static_cast<char>(0x80 | (compressed ? 0x40 : 0) | opcode));
  const uint64_t n = payload.size();
  if (n < 126) {
    frame.push_back(static_cast<char>(0x80 | n));
  } else if (n <= 0xffff) {
    frame.push_back(static_cast<char>(0x80 | 126));
    for (int shift = 8; shift >= 0; shift -= 8) frame.push_back(static_cast<char>(n >> shift));
  } else {
    frame.push_back(static_cast<char>(0x80 | 127));
    for (int shift = 56; shift >= 0; shift -= 8) frame.push_back(static_cast<char>(n >> shift));
  }
  const uint32_t mask = randomMask();
  char key[4];
  for (int i = 0; i < 4; ++i) key[i] = static_cast<char>(mask >> (8 * i));
  frame.append(key, 4);
  for (size_t i = 0; i < n; ++i) frame.push_back(static_cast<char>(payload[i] ^ key[i % 4]));
  return frame;
}

std::string deflateMessage(std::string_view payload) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&stream, payload.size()) + 16, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(payload.data()));
  stream.avail_in = static_cast<uInt>(payload.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_SYNC_FLUSH);
  out.resize(out.size() - stream.avail_out);
  deflateEnd(&stream);
  if (status != Z_OK || stream.avail_in != 0 || !out.ends_with(kDeflateTail)) {
    throw std::runtime_error("deflate failed");
  }
  out.resize(out.size() - kDeflateTail.size());
  return out;
}

Inflater::Inflater() {
  if (inflateInit2(&stream_, -15) != Z_OK) throw std::runtime_error("inflateInit2 failed");
}

Inflater::~Inflater() { inflateEnd(&stream_); }

bool Inflater::inflate(std::string_view in, size_t limit, std::string* out) {
  if (inflateReset(&stream_) != Z_OK) return false;
  const std::string input = std::string(in) + std::string(kDeflateTail);
  // One spare byte shows a message that inflates to more than the limit.
  out->resize(limit + 1);
  stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream_.avail_in = static_cast<uInt>(input.size());
  stream_.next_out = reinterpret_cast<Bytef*>(out->data());
  stream_.avail_out = static_cast<uInt>(out->size());
  const int status = ::inflate(&stream_, Z_SYNC_FLUSH);
  out->resize(out->size() - stream_.avail_out);
  return (status == Z_OK || status == Z_STREAM_END) && stream_.avail_in == 0 &&
         out->size() <= limit;
}

}  // namespace wsload
