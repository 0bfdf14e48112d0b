#include "net/http/RequestTarget.h"

#include <algorithm>
#include <cstddef>

namespace libnet::http::detail {

namespace {

bool isSchemeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '-' || c == '.';
}

RequestTarget refused(std::string_view why) { return RequestTarget{why, {}, {}}; }

// origin-form's path and query, "/" for an empty path.
RequestTarget splitPathAndQuery(std::string_view pathAndQuery) {
  const size_t q = pathAndQuery.find('?');
  RequestTarget parts{{}, pathAndQuery.substr(0, q), {}};
  if (parts.path.empty()) parts.path = "/";
  if (q != std::string_view::npos) parts.query = pathAndQuery.substr(q + 1);
  return parts;
}

// absolute-form, scheme "://" authority [path] ["?" query].
RequestTarget splitAbsolute(std::string_view t) {
  const size_t schemeEnd = t.find("://");
  if (schemeEnd == std::string_view::npos || schemeEnd == 0 ||
      !std::all_of(t.begin(), t.begin() + static_cast<ptrdiff_t>(schemeEnd), isSchemeChar) ||
      (t[0] >= '0' && t[0] <= '9')) {
    return refused("invalid request target");
  }
  const size_t authority = schemeEnd + 3;
  const size_t pathStart = t.find_first_of("/?", authority);
  if (pathStart == authority || authority == t.size()) return refused("invalid request target");
  if (pathStart == std::string_view::npos) return RequestTarget{{}, "/", {}};
  return splitPathAndQuery(t.substr(pathStart));
}

}  // namespace

RequestTarget splitRequestTarget(std::string_view t, Method method) {
  // A fragment is never sent (RFC 9112 3.2); one here means a broken client
  // or an attempt to make a path mean two things.
  if (t.find('#') != std::string_view::npos) return refused("invalid request target");
  if (method == Method::kConnect) {
    // authority-form, host:port, and only for CONNECT (RFC 9112 3.2.3).
    if (t.find_first_of("/?@") != std::string_view::npos || t.find(':') == std::string_view::npos) {
      return refused("invalid CONNECT target");
    }
    return RequestTarget{{}, t, {}};
  }
  if (t.front() == '/') return splitPathAndQuery(t);
  if (t == "*") {
    if (method != Method::kOptions) return refused("asterisk target outside OPTIONS");
    return RequestTarget{{}, t, {}};
  }
  // absolute-form, which servers must accept (RFC 9112 3.2.2).
  return splitAbsolute(t);
}

}  // namespace libnet::http::detail
