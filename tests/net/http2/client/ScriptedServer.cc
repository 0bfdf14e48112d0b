#include "tests/net/http2/client/ScriptedServer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace libnet::http2::test {

namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr int kAcceptTimeoutMs = 10000;

}  // namespace

std::string frame(uint8_t type, uint8_t flags, int32_t stream, std::string_view payload) {
  std::string out;
  const size_t n = payload.size();
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((static_cast<uint32_t>(stream) >> shift) & 0xff));
  }
  out.append(payload);
  return out;
}

std::string hpackInteger(uint8_t firstByte, int prefixBits, uint64_t value) {
  const uint64_t max = (uint64_t{1} << prefixBits) - 1;
  std::string out;
  if (value < max) {
    out.push_back(static_cast<char>(firstByte | value));
    return out;
  }
  out.push_back(static_cast<char>(firstByte | max));
  value -= max;
  while (value >= 128) {
    out.push_back(static_cast<char>((value % 128) + 128));
    value /= 128;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

namespace {

std::string literalWith(uint8_t first, int prefixBits, std::string_view name,
                        std::string_view value) {
  std::string out = hpackInteger(first, prefixBits, 0);  // a new name
  out += hpackInteger(0, 7, name.size());
  out.append(name);
  out += hpackInteger(0, 7, value.size());
  out.append(value);
  return out;
}

}  // namespace

std::string literal(std::string_view name, std::string_view value) {
  return literalWith(0x00, 4, name, value);
}

std::string literalIndexed(std::string_view name, std::string_view value) {
  return literalWith(0x40, 6, name, value);
}

std::string indexed(uint64_t index) { return hpackInteger(0x80, 7, index); }

std::string responseBlock(int status,
                          const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string block = literal(":status", std::to_string(status));
  for (const auto& [name, value] : fields) block += literal(name, value);
  return block;
}

bool ScriptPeer::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::optional<Frame> ScriptPeer::next() {
  char buf[65536];
  for (;;) {
    if (!prefaceSeen_ && bytes_.size() >= kPreface.size()) {
      bytes_.erase(0, kPreface.size());
      prefaceSeen_ = true;
    }
    if (prefaceSeen_ && bytes_.size() >= 9) {
      const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data());
      const size_t length = (size_t{p[0]} << 16) | (size_t{p[1]} << 8) | p[2];
      if (bytes_.size() >= 9 + length) {
        Frame f;
        f.type = p[3];
        f.flags = p[4];
        f.stream = static_cast<int32_t>(((uint32_t{p[5]} & 0x7f) << 24) | (uint32_t{p[6]} << 16) |
                                        (uint32_t{p[7]} << 8) | p[8]);
        f.payload = bytes_.substr(9, length);
        bytes_.erase(0, 9 + length);
        if (f.type == NGHTTP2_GOAWAY && f.payload.size() >= 8) {
          const auto* g = reinterpret_cast<const unsigned char*>(f.payload.data());
          goAway_ = (uint32_t{g[4]} << 24) | (uint32_t{g[5]} << 16) | (uint32_t{g[6]} << 8) | g[7];
        }
        return f;
      }
    }
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    bytes_.append(buf, static_cast<size_t>(n));
  }
}

bool ScriptPeer::handshake(std::string_view settings) {
  for (;;) {
    const std::optional<Frame> f = next();
    if (!f) return false;
    if (f->type == NGHTTP2_SETTINGS && (f->flags & NGHTTP2_FLAG_ACK) == 0) break;
  }
  return send(frame(NGHTTP2_SETTINGS, 0, 0, settings) +
              frame(NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, {}));
}

std::vector<int32_t> ScriptPeer::requests(size_t n) {
  std::vector<int32_t> ids;
  while (ids.size() < n) {
    const std::optional<Frame> f = next();
    if (!f) break;
    if (f->type == NGHTTP2_HEADERS) ids.push_back(f->stream);
  }
  return ids;
}

void ScriptPeer::shutdownWrite() { ::shutdown(fd_, SHUT_WR); }

std::optional<uint32_t> ScriptPeer::drain() {
  while (next()) {
  }
  return goAway_;
}

ScriptedServer::ScriptedServer(Script script) {
  listen_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (!listen_ || ::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_.get(), 4) != 0 ||
      ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("ScriptedServer: cannot listen");
  }
  sockaddr_storage storage{};
  std::memcpy(&storage, &addr, sizeof addr);
  address_ = SocketAddress::fromSockAddr(storage, len);
  thread_ = std::thread([this, script = std::move(script)] {
    pollfd pfd{listen_.get(), POLLIN, 0};
    if (::poll(&pfd, 1, kAcceptTimeoutMs) != 1) return;
    const UniqueFd fd(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) return;
    timeval tv{5, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ScriptPeer peer(fd.get());
    script(peer);
  });
}

ScriptedServer::~ScriptedServer() { thread_.join(); }

}  // namespace libnet::http2::test
