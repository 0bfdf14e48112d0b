// ConnectFailure: why a connect by name (net/HappyEyeballs.h) found no
// connection: the outcome of both lookups and the errno of every connect
// attempt, with its address, in the order the attempts were made; or, by name
// or by address, why a connection's layer (a TLS handshake) failed after the
// TCP connect. A plain value; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "net/InetAddress.h"
#include "net/NameResolver.h"

namespace libnet {

struct AttemptError {
  InetAddress address;
  int error = 0;  // the errno of connect(), or of the socket() before it
  // The kernel refused the attempt in a way retrying cannot cure (EACCES,
  // EINVAL, EAFNOSUPPORT, ...), not a peer or network condition.
  bool permanent = false;
};

struct ConnectFailure {
  std::string host{};  // as given: a name or a numeric address
  uint16_t port = 0;
  // The lookups' errors; kOk for a family that answered (perhaps with no
  // address) or was not looked up (a numeric host).
  ResolveError ipv6{};
  ResolveError ipv4{};
  std::vector<AttemptError> attempts{};
  // The TCP connect succeeded but the connection's layer closed it before
  // it was up: why ("certificate verify failed: hostname mismatch"; see
  // TcpConnection::layerFailure()). Then nothing else above is set but the
  // host and port.
  std::string layer{};

  // One line naming the host and every error: "example.com:80: [2001:db8::1]:80:
  // Connection timed out; 192.0.2.1:80: Connection refused", or
  // "no.such:80: IPv6 lookup: no.such: NXDOMAIN; IPv4 lookup: ...", or
  // "example.com:443: certificate verify failed: hostname mismatch".
  [[nodiscard]] std::string message() const;
  // The errno that says the most, for callers that take one: EPROTO for a
  // layer's failure, else the last attempt's, except that "this network
  // cannot be reached" (ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL,
  // EAFNOSUPPORT) yields to an error of an attempt that got further. Without attempts: ETIMEDOUT if
  // a lookup timed out, ECANCELED if one was cancelled, else EHOSTUNREACH (no address).
  [[nodiscard]] int error() const;
  // Trying again cannot help: every attempt failed permanently, or the name
  // is not a valid host name.
  [[nodiscard]] bool permanent() const;
};

using ConnectFailureCallback = std::function<void(const ConnectFailure&)>;

}  // namespace libnet
