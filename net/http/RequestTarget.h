// RequestTarget: splits an HTTP/1.1 request-target (RFC 9112 3.2) into the
// path and query a server routes on, for each of its four forms: origin-form
// ("/path?query", the usual case), absolute-form ("http://host/path?query",
// which servers must accept), authority-form ("host:port", CONNECT only) and
// asterisk-form ("*", OPTIONS only). Rejects a target whose form does not fit
// the method, and any fragment. Nothing is percent-decoded. A private helper
// of HttpParser; stateless, any thread.
#pragma once

#include <string_view>

#include "net/http/HttpRequest.h"

namespace libnet::http::detail {

struct RequestTarget {
  // Why the target was refused (always a 400), or empty if it was not.
  std::string_view error;
  // Views into the target passed in (or "/" for an empty path).
  std::string_view path;
  std::string_view query;
};

// `target` is non-empty and made of request-target characters (the request
// line's parser checked both).
[[nodiscard]] RequestTarget splitRequestTarget(std::string_view target, Method method);

}  // namespace libnet::http::detail
