// dns::Resolver: host-name lookups on one EventLoop, with c-ares doing DNS.
//
//   dns::Resolver resolver(&loop);                 // /etc/resolv.conf's servers
//   auto query = resolver.lookup("example.com", 443, NameResolver::Family::kAny,
//                                [](ResolveResult r) { ... });   // later, on the loop
//
// No thread and nothing blocking: c-ares's sockets are Channels of the loop
// (both backends), its retransmission timeouts one loop timer, and every
// answer is processed by ares_process_fd() when its socket is readable. A
// numeric address resolves without a query. /etc/hosts and /etc/resolv.conf
// are honoured as c-ares does (read when the resolver is made, and /etc/hosts
// per lookup: a local file, not a network wait). See docs/dns.md.
//
// Results and errors are values (NameResolver.h): NXDOMAIN, no data of the
// family, SERVFAIL, REFUSED, timeout and "no server reachable" are distinct,
// and the message names the host. Callbacks run from the loop's queue, never
// inside lookup() nor inside c-ares.
//
// Cancelling (Query::cancel() or destroying the Query) frees the callback
// and the result at once; the callback never runs. c-ares 1.18 cannot cancel
// one query, so its query goes on, detached, until it is answered or its
// tries time out (bounded by timeout x tries), and its answer is dropped.
// Destroying the Resolver cancels everything in flight without calling back
// and closes its sockets; a Query that outlives it is inert.
//
// Loop thread only, construction and destruction included. The resolver
// must be destroyed before its loop.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Duration.h"
#include "net/InetAddress.h"
#include "net/NameResolver.h"

namespace libnet {
class EventLoop;
}

namespace libnet::dns {

class Resolver final : public NameResolver {
 public:
  struct Options {
    // Name servers with their ports; empty: those of /etc/resolv.conf (or
    // 127.0.0.1:53 if it names none), as c-ares reads it.
    std::vector<InetAddress> servers;
    // Time to wait for an answer to one try (c-ares doubles it on each
    // round through the servers); zero: resolv.conf's (c-ares: 5 s).
    Duration timeout{};
    // Tries per server; zero: resolv.conf's "attempts" (c-ares: 4).
    int tries = 0;
    // Look in /etc/hosts before asking DNS (c-ares's "lookups"; with false,
    // only DNS is asked). "localhost" and names under it are the loopback
    // addresses either way, without a query (RFC 6761).
    bool useHostsFile = true;
    // Search domains appended to names with fewer dots than ndots; nullopt:
    // resolv.conf's. An empty list makes every name absolute.
    std::optional<std::vector<std::string>> searchDomains;
    // Order the addresses by RFC 6724 (c-ares connects a UDP socket per
    // address to find the source; no packet is sent). False keeps the
    // server's order and saves those system calls.
    bool sortAddresses = true;
    // On a SERVFAIL or REFUSED answer, ask the next server instead of
    // reporting it. c-ares 1.18 then reports "no server reachable" when
    // every server refused; the default reports the answer as it came.
    bool nextServerOnFailure = false;
    // SO_RCVBUF of the UDP sockets; 0: the kernel's default. The answers to
    // a burst of lookups all come to one socket, and those that do not fit
    // before the loop reads them are lost and asked again after a timeout.
    int receiveBufferBytes = 0;
    // Names whose addresses are kept for their answer's TTL (at most
    // cacheMaxTtl) and given again without a query; 0: no cache. Answers
    // without addresses are not kept. See docs/dns.md for when it pays.
    size_t cacheEntries = 0;
    Duration cacheMaxTtl = std::chrono::minutes(5);
  };

  // Reads /etc/resolv.conf (unless every setting it could give is set).
  // Throws std::runtime_error if c-ares cannot be set up.
  explicit Resolver(EventLoop* loop);
  Resolver(EventLoop* loop, const Options& options);
  ~Resolver() override;
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  [[nodiscard]] QueryPtr lookup(std::string_view host, uint16_t port, Family family,
                                Callback cb) override;

  [[nodiscard]] EventLoop* loop() const { return loop_; }
  // Lookups c-ares still works on, cancelled ones included.
  [[nodiscard]] size_t queriesInFlight() const;
  // Sockets c-ares has open (0 once no query is in flight).
  [[nodiscard]] size_t openSockets() const;
  // Lookups answered from the cache so far.
  [[nodiscard]] uint64_t cacheHits() const;

  class Impl;  // Resolver.cc

 private:
  EventLoop* loop_;
  // Shared with the loop's queue and timer, which may run after the
  // resolver is gone (they then do nothing).
  std::shared_ptr<Impl> impl_;
};

}  // namespace libnet::dns
