// AddressCache: the addresses of names recently looked up, each kept for its
// answer's TTL (capped), for dns::Resolver's optional cache. Bounded: past
// its capacity the least recently used name goes. Only answers with
// addresses are kept (no negative caching: c-ares's getaddrinfo does not
// report the TTL of a negative answer).
//
// Keys are the lower-cased name and the family asked for; ports are not
// part of it (the addresses are returned with the port of the lookup).
// Not thread-safe: the resolver's loop thread only.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/Duration.h"
#include "net/InetAddress.h"
#include "net/NameResolver.h"

namespace libnet::dns {

class AddressCache {
 public:
  AddressCache(size_t capacity, Duration maxTtl) : capacity_(capacity), maxTtl_(maxTtl) {}

  // The addresses kept for `host` and `family`, with `port`; nullopt if
  // there are none or they have expired (then they are dropped).
  [[nodiscard]] std::optional<std::vector<InetAddress>> find(std::string_view host,
                                                             NameResolver::Family family,
                                                             uint16_t port, MonoTime now);
  // Keeps `addresses` for min(ttl, maxTtl); a TTL of zero keeps nothing.
  void insert(std::string_view host, NameResolver::Family family,
              const std::vector<InetAddress>& addresses, Duration ttl, MonoTime now);

  [[nodiscard]] size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<InetAddress> addresses;
    MonoTime expires;
    std::list<std::string>::iterator recent;  // its place in recent_
  };

  static std::string keyOf(std::string_view host, NameResolver::Family family);

  const size_t capacity_;
  const Duration maxTtl_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> recent_;  // keys, most recently used first
};

}  // namespace libnet::dns
