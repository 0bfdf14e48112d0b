// NameResolver: what a client needs of a resolver to connect by host name.
// The interface lives here so that TcpClient can take "host:port" without
// every program linking a DNS library: an application that connects by name
// gives its client a resolver (dns::Resolver, net/dns/Resolver.h, which
// drives c-ares on the loop); one that connects to numeric addresses needs
// none.
//
// Loop thread only: lookup() is called on the resolver's loop, and its
// callback runs there later, never inside lookup() itself (not even for a
// numeric address or a cached answer), so a caller may hold its own state
// across the call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/InetAddress.h"

namespace libnet {

// Why a lookup gave no address. Each reason is distinct so that a caller can
// tell a name that does not exist from a server that is down.
enum class ResolveErrc : uint8_t {
  kOk,
  kNotFound,       // NXDOMAIN: the name does not exist
  kNoData,         // the name exists but has no address of the family asked for
  kServerFailure,  // SERVFAIL
  kRefused,        // the server refused the query
  kTimedOut,       // no answer within the tries and timeouts
  kNoServer,       // no name server could be reached (all refused or unreachable)
  kBadResponse,    // an answer that could not be parsed
  kBadName,        // not a valid host name
  kCancelled,      // cancelled, or the resolver was destroyed
  kOther,          // anything else (the message says what)
};

// "NXDOMAIN", "SERVFAIL", "timeout", ...: a short fixed name of the reason.
[[nodiscard]] const char* resolveErrcName(ResolveErrc errc);

struct ResolveError {
  ResolveErrc errc = ResolveErrc::kOk;
  // Names the host and the reason ("no.such.host: NXDOMAIN"); empty on success.
  std::string message;
  [[nodiscard]] explicit operator bool() const { return errc != ResolveErrc::kOk; }
};

// The addresses a lookup found (with the port asked for), in the order the
// resolver gives them, or why there are none.
struct ResolveResult {
  std::vector<InetAddress> addresses;
  ResolveError error;
  [[nodiscard]] bool ok() const { return !error; }
};

class NameResolver {
 public:
  enum class Family : uint8_t { kIPv4, kIPv6, kAny };
  using Callback = std::function<void(ResolveResult)>;

  // A lookup in flight. Destroying it (or cancel()) cancels the lookup: its
  // callback does not run afterwards and everything the lookup held is
  // freed. A Query may outlive its resolver (it is then inert).
  class Query {
   public:
    virtual ~Query() = default;
    virtual void cancel() = 0;
  };
  using QueryPtr = std::unique_ptr<Query>;

  virtual ~NameResolver() = default;

  // Looks up `host` (a name, or a numeric address, which needs no query) for
  // `family` and calls `cb` once, on the loop, with the result; the
  // addresses carry `port`. Destroying the resolver cancels every query in
  // flight without calling back.
  [[nodiscard]] virtual QueryPtr lookup(std::string_view host, uint16_t port, Family family,
                                        Callback cb) = 0;
};

}  // namespace libnet
