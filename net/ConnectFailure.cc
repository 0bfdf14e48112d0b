#include "net/ConnectFailure.h"

#include <cerrno>

#include "base/Logging.h"

namespace libnet {

namespace {

// Says only that this host has no way into the peer's network (no IPv6
// route, say): any error from an attempt that went further tells more.
bool isLocalNetworkError(int err) {
  return err == ENETUNREACH || err == EHOSTUNREACH || err == EADDRNOTAVAIL || err == EAFNOSUPPORT;
}

void appendLookupError(std::string* out, const char* family, const ResolveError& error) {
  if (!error) return;
  if (!out->empty()) *out += "; ";
  *out += family;
  *out += " lookup: ";
  *out += error.message.empty() ? resolveErrcName(error.errc) : error.message;
}

}  // namespace

std::string ConnectFailure::message() const {
  if (!layer.empty()) {
    // A Unix socket's path (no port) stands alone.
    return (port != 0 ? InetAddress::joinHostPort(host, port) : host) + ": " + layer;
  }
  std::string errors;
  for (const AttemptError& attempt : attempts) {
    if (!errors.empty()) errors += "; ";
    errors += attempt.address.toIpPort() + ": " + strerrorTl(attempt.error);
  }
  appendLookupError(&errors, "IPv6", ipv6);
  appendLookupError(&errors, "IPv4", ipv4);
  if (errors.empty()) errors = "no address";
  return InetAddress::joinHostPort(host, port) + ": " + errors;
}

int ConnectFailure::error() const {
  if (!layer.empty()) return EPROTO;
  int chosen = 0;
  for (const AttemptError& attempt : attempts) {
    if (chosen == 0 || !isLocalNetworkError(attempt.error) || isLocalNetworkError(chosen)) {
      chosen = attempt.error;
    }
  }
  if (chosen != 0) return chosen;
  if (ipv6.errc == ResolveErrc::kTimedOut || ipv4.errc == ResolveErrc::kTimedOut) return ETIMEDOUT;
  if (ipv6.errc == ResolveErrc::kCancelled || ipv4.errc == ResolveErrc::kCancelled) {
    return ECANCELED;
  }
  return EHOSTUNREACH;
}

bool ConnectFailure::permanent() const {
  if (ipv6.errc == ResolveErrc::kBadName || ipv4.errc == ResolveErrc::kBadName) return true;
  if (attempts.empty()) return false;
  for (const AttemptError& attempt : attempts) {
    if (!attempt.permanent) return false;
  }
  return true;
}

}  // namespace libnet
