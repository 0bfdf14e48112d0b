#include "net/SocketAddress.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace libnet {

namespace {

constexpr std::string_view kUnixPrefix = "unix:";

std::string tooLong(std::string_view what, std::string_view name) {
  return "unix socket " + std::string(what) + " '" + std::string(name) + "' is " +
         std::to_string(name.size()) + " bytes long; the limit is " +
         std::to_string(SocketAddress::kMaxUnixNameLength) + " (sizeof sun_path - 1)";
}

}  // namespace

SocketAddress::SocketAddress(const InetAddress& inet) : len_(inet.sockLen()) {
  std::memset(&storage_, 0, sizeof storage_);
  std::memcpy(&storage_, inet.sockAddr(), len_);
}

SocketAddress SocketAddress::makeUnix(std::string_view name, bool abstract) {
  SocketAddress address;
  std::memset(&address.storage_, 0, sizeof address.storage_);
  address.storage_.un.sun_family = AF_UNIX;
  char* out = address.storage_.un.sun_path + (abstract ? 1 : 0);
  std::memcpy(out, name.data(), name.size());
  // A path counts its NUL, as the kernel reports it back; an abstract name
  // is exactly its bytes after the leading NUL (a padded one would be a
  // different name).
  address.len_ = static_cast<socklen_t>(kPathOffset + 1 + name.size());
  return address;
}

SocketAddress SocketAddress::unixPath(std::string_view path) {
  if (path.empty()) throw std::invalid_argument("unix socket path is empty");
  if (path.find('\0') != std::string_view::npos) {
    throw std::invalid_argument("unix socket path contains a NUL byte");
  }
  if (path.size() > kMaxUnixNameLength) throw std::invalid_argument(tooLong("path", path));
  return makeUnix(path, false);
}

SocketAddress SocketAddress::unixAbstract(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("unix socket abstract name is empty");
  if (name.size() > kMaxUnixNameLength) {
    throw std::invalid_argument(tooLong("abstract name", name));
  }
  return makeUnix(name, true);
}

SocketAddress SocketAddress::unixAddress(std::string_view text) {
  if (!text.empty() && text.front() == '@') return unixAbstract(text.substr(1));
  return unixPath(text);
}

std::optional<SocketAddress> SocketAddress::parse(std::string_view text) {
  if (text.starts_with(kUnixPrefix)) {
    const std::string_view rest = text.substr(kUnixPrefix.size());
    try {
      return unixAddress(rest);
    } catch (const std::invalid_argument&) {
      return std::nullopt;
    }
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view host = text.substr(0, colon);
  const std::optional<uint16_t> port = InetAddress::parsePort(text.substr(colon + 1));
  // An unbracketed IPv6 address has more colons: ambiguous.
  if (!port || (host.find(':') != std::string_view::npos && !host.starts_with('['))) {
    return std::nullopt;
  }
  if (std::optional<InetAddress> inet = InetAddress::parse(host, *port)) return *inet;
  return std::nullopt;
}

SocketAddress SocketAddress::fromSockAddr(const sockaddr_storage& storage, socklen_t len) {
  if (storage.ss_family != AF_UNIX) {
    InetAddress inet;
    inet.setSockAddr(storage);
    return inet;
  }
  SocketAddress address;
  std::memset(&address.storage_, 0, sizeof address.storage_);
  const socklen_t kept = std::min<socklen_t>(len, sizeof(sockaddr_un));
  std::memcpy(&address.storage_.un, &storage, kept);
  address.len_ = std::max<socklen_t>(kept, kPathOffset);
  return address;
}

InetAddress SocketAddress::asInet() const {
  return family() == AF_INET6 ? InetAddress(storage_.in6) : InetAddress(storage_.in);
}

std::optional<InetAddress> SocketAddress::inet() const {
  if (isUnix()) return std::nullopt;
  return asInet();
}

std::string SocketAddress::path() const {
  if (!isUnix() || len_ <= kPathOffset) return {};
  const size_t size = len_ - kPathOffset;
  if (isAbstract()) return std::string(un() + 1, size - 1);
  return std::string(un(), ::strnlen(un(), size));
}

std::string SocketAddress::toString() const {
  if (!isUnix()) return asInet().toIpPort();
  return std::string(kUnixPrefix) + (isAbstract() ? "@" : "") + path();
}

std::string SocketAddress::toIp() const { return isUnix() ? std::string() : asInet().toIp(); }

uint16_t SocketAddress::port() const { return isUnix() ? 0 : asInet().port(); }

bool SocketAddress::isWildcard() const { return !isUnix() && asInet().isWildcard(); }

bool operator==(const SocketAddress& a, const SocketAddress& b) {
  if (a.family() != b.family()) return false;
  if (!a.isUnix()) return a.asInet() == b.asInet();
  return a.isAbstract() == b.isAbstract() && a.path() == b.path();
}

}  // namespace libnet
