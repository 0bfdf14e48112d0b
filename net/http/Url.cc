#include "net/http/Url.h"

#include <arpa/inet.h>

#include "net/http/HttpChars.h"
#include "net/http/HttpSyntax.h"

namespace libnet::http {

namespace {

struct SchemeEntry {
  std::string_view name;
  Url::Scheme scheme;
};

constexpr SchemeEntry kSchemes[] = {
    {"http", Url::Scheme::kHttp},
    {"https", Url::Scheme::kHttps},
    {"ws", Url::Scheme::kWs},
    {"wss", Url::Scheme::kWss},
};

bool failWith(std::string* error, std::string_view why) {
  if (error != nullptr) error->assign(why);
  return false;
}

// A registered name or IPv4 address: RFC 3986's unreserved characters
// (letters, digits, "-._~"). Percent-encoded and sub-delimiter names are
// legal URI syntax but no resolver takes them.
bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || detail::isDigit(c) || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

bool parsePort(std::string_view text, uint16_t* port) {
  size_t value = 0;
  if (text.size() > 5 || detail::parseDecimal(text, &value) != detail::NumberParse::kValid ||
      value == 0 || value > 65535) {
    return false;
  }
  *port = static_cast<uint16_t>(value);
  return true;
}

}  // namespace

uint16_t Url::defaultPort(Scheme scheme) {
  return scheme == Scheme::kHttps || scheme == Scheme::kWss ? 443 : 80;
}

std::string_view Url::schemeName() const {
  for (const SchemeEntry& e : kSchemes) {
    if (e.scheme == scheme_) return e.name;
  }
  return "http";
}

// Splits "scheme://authority/target" and checks each part; the helpers it
// calls fill `url` and say what is wrong.
std::optional<Url> Url::parse(std::string_view text, std::string* error) {
  Url url;
  const size_t sep = text.find("://");
  if (sep == std::string_view::npos) {
    failWith(error, "missing scheme (expected http://, https://, ws:// or wss://)");
    return std::nullopt;
  }
  bool known = false;
  for (const SchemeEntry& e : kSchemes) {
    if (detail::equalsIgnoreCase(text.substr(0, sep), e.name)) {
      url.scheme_ = e.scheme;
      known = true;
    }
  }
  if (!known) {
    failWith(error, "unsupported scheme (expected http, https, ws or wss)");
    return std::nullopt;
  }
  std::string_view rest = text.substr(sep + 3);
  const size_t authorityEnd = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, authorityEnd);
  rest = authorityEnd == std::string_view::npos ? std::string_view() : rest.substr(authorityEnd);
  if (!url.parseAuthority(authority, error) || !url.parseTarget(rest, error)) return std::nullopt;
  return url;
}

bool Url::parseAuthority(std::string_view authority, std::string* error) {
  if (authority.find('@') != std::string_view::npos) {
    return failWith(error, "userinfo is not allowed");
  }
  std::string_view portText;
  bool hasPort = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return failWith(error, "unterminated IPv6 literal");
    const std::string address(authority.substr(1, close - 1));
    in6_addr unused{};
    if (inet_pton(AF_INET6, address.c_str(), &unused) != 1) {
      return failWith(error, "invalid IPv6 literal");
    }
    host_ = address;
    ipv6_ = true;
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':')
      return failWith(error, "garbage after IPv6 literal");
    hasPort = !after.empty();
    if (hasPort) portText = after.substr(1);
  } else {
    const size_t colon = authority.find(':');
    const std::string_view name = authority.substr(0, colon);
    if (name.empty()) return failWith(error, "missing host");
    for (char c : name) {
      if (!isNameChar(c)) return failWith(error, "invalid character in host");
    }
    host_.clear();
    for (char c : name) host_.push_back(detail::toLowerAscii(c));
    hasPort = colon != std::string_view::npos;
    if (hasPort) portText = authority.substr(colon + 1);
  }
  port_ = defaultPort(scheme_);
  // "host:" with an empty port means the default (RFC 3986 3.2.3).
  if (hasPort && !portText.empty() && !parsePort(portText, &port_)) {
    return failWith(error, "invalid port");
  }
  return true;
}

bool Url::parseTarget(std::string_view rest, std::string* error) {
  rest = rest.substr(0, rest.find('#'));
  for (char c : rest) {
    if (!detail::hasClass(c, detail::kTargetChar)) {
      return failWith(error, "invalid character in path or query (percent-encode it)");
    }
  }
  target_.clear();
  if (rest.empty() || rest.front() == '?') target_.push_back('/');
  target_.append(rest);
  return true;
}

std::string Url::hostPort() const {
  std::string out = ipv6_ ? "[" + host_ + "]" : host_;
  out += ':';
  out += std::to_string(port_);
  return out;
}

std::string Url::hostHeader() const {
  std::string out = ipv6_ ? "[" + host_ + "]" : host_;
  if (port_ != defaultPort(scheme_)) {
    out += ':';
    out += std::to_string(port_);
  }
  return out;
}

std::string Url::origin() const {
  std::string out(schemeName());
  out += "://";
  out += hostHeader();
  return out;
}

std::string Url::toString() const { return origin() + target_; }

std::optional<Url> Url::resolve(std::string_view reference, std::string* error) const {
  if (reference.find("://") != std::string_view::npos &&
      reference.find("://") < reference.find_first_of("/?#")) {
    return parse(reference, error);
  }
  if (reference.substr(0, 2) == "//") {
    return parse(std::string(schemeName()) + ":" + std::string(reference), error);
  }
  std::string target;
  if (reference.empty() || reference.front() == '?' || reference.front() == '#') {
    const std::string_view path = std::string_view(target_).substr(0, target_.find('?'));
    target = std::string(path) + std::string(reference);
  } else if (reference.front() == '/') {
    target = reference;
  } else {
    const std::string_view path = std::string_view(target_).substr(0, target_.find('?'));
    target = std::string(path.substr(0, path.rfind('/') + 1)) + std::string(reference);
  }
  Url url = *this;
  if (!url.parseTarget(target, error)) return std::nullopt;
  return url;
}

}  // namespace libnet::http
