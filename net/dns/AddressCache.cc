#include "net/dns/AddressCache.h"

#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace libnet::dns {

namespace {

InetAddress withPort(const InetAddress& address, uint16_t port) {
  if (address.family() == AF_INET6) {
    sockaddr_in6 sin6;
    std::memcpy(&sin6, address.sockAddr(), sizeof sin6);
    sin6.sin6_port = htons(port);
    return InetAddress(sin6);
  }
  sockaddr_in sin;
  std::memcpy(&sin, address.sockAddr(), sizeof sin);
  sin.sin_port = htons(port);
  return InetAddress(sin);
}

}  // namespace

std::string AddressCache::keyOf(std::string_view host, NameResolver::Family family) {
  std::string key;
  key.reserve(host.size() + 2);
  for (const char c : host)
    key.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  // A trailing dot names the same host.
  if (!key.empty() && key.back() == '.') key.pop_back();
  key.push_back('/');
  key.push_back(static_cast<char>('0' + static_cast<int>(family)));
  return key;
}

std::optional<std::vector<InetAddress>> AddressCache::find(std::string_view host,
                                                           NameResolver::Family family,
                                                           uint16_t port, MonoTime now) {
  const auto it = entries_.find(keyOf(host, family));
  if (it == entries_.end()) return std::nullopt;
  if (now >= it->second.expires) {
    recent_.erase(it->second.recent);
    entries_.erase(it);
    return std::nullopt;
  }
  recent_.splice(recent_.begin(), recent_, it->second.recent);
  std::vector<InetAddress> addresses = it->second.addresses;
  for (InetAddress& a : addresses) a = withPort(a, port);
  return addresses;
}

void AddressCache::insert(std::string_view host, NameResolver::Family family,
                          const std::vector<InetAddress>& addresses, Duration ttl, MonoTime now) {
  if (capacity_ == 0 || ttl <= Duration::zero() || addresses.empty()) return;
  std::string key = keyOf(host, family);
  const MonoTime expires = now + std::min(ttl, maxTtl_);
  if (const auto it = entries_.find(key); it != entries_.end()) {
    it->second.addresses = addresses;
    it->second.expires = expires;
    recent_.splice(recent_.begin(), recent_, it->second.recent);
    return;
  }
  if (entries_.size() >= capacity_) {
    entries_.erase(recent_.back());
    recent_.pop_back();
  }
  recent_.push_front(key);
  entries_.emplace(std::move(key), Entry{addresses, expires, recent_.begin()});
}

}  // namespace libnet::dns
