// Url: an absolute http, https, ws or wss URL taken apart into what a client
// needs to connect and to write its request line: scheme, host, port and
// request target (path and query). A value type; any thread.
//
// What parse() accepts (RFC 3986 and RFC 9110 4.2, narrowed to what a client
// should send):
//   - the scheme, case-insensitive, then "://";
//   - a host: a name or IPv4 address (lower-cased), or an IPv6 literal in
//     brackets ("[::1]", kept without them in host()); no zone ids;
//   - an optional ":port", 1-65535; left out (or empty), 80 for http/ws and
//     443 for https/wss;
//   - no userinfo ("user:pass@host" is refused: credentials in URLs end up
//     in logs, and RFC 9110 4.2.4 deprecates them);
//   - a path and query of visible ASCII only (anything else must be
//     percent-encoded); the target is path + query, "/" for an empty path;
//     a fragment is dropped (it is never sent).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace libnet::http {

class Url {
 public:
  enum class Scheme : uint8_t { kHttp, kHttps, kWs, kWss };

  // nullopt for text that is not such a URL; `error` (optional) then says
  // why, e.g. "userinfo is not allowed".
  [[nodiscard]] static std::optional<Url> parse(std::string_view text,
                                                std::string* error = nullptr);

  [[nodiscard]] Scheme scheme() const { return scheme_; }
  [[nodiscard]] std::string_view schemeName() const;
  // https and wss: the connection is TLS.
  [[nodiscard]] bool secure() const { return scheme_ == Scheme::kHttps || scheme_ == Scheme::kWss; }
  // A name, IPv4 address, or IPv6 address without brackets.
  [[nodiscard]] const std::string& host() const { return host_; }
  [[nodiscard]] bool hostIsIpv6() const { return ipv6_; }
  [[nodiscard]] uint16_t port() const { return port_; }
  // Path and query, never empty ("/").
  [[nodiscard]] const std::string& target() const { return target_; }

  // "host:port" with brackets around an IPv6 address: what TcpClient takes.
  [[nodiscard]] std::string hostPort() const;
  // The Host header's value: the port only when it is not the scheme's default.
  [[nodiscard]] std::string hostHeader() const;
  // scheme://host[:port]: the same origin means the same text.
  [[nodiscard]] std::string origin() const;
  // The URL written back in its normal form (no fragment).
  [[nodiscard]] std::string toString() const;

  // A reference from a Location header resolved against this URL: an
  // absolute URL, a scheme-relative "//host/path", an absolute path "/p",
  // or a relative path (resolved against this target's directory; dot
  // segments are kept as given).
  [[nodiscard]] std::optional<Url> resolve(std::string_view reference,
                                           std::string* error = nullptr) const;

  [[nodiscard]] static uint16_t defaultPort(Scheme scheme);

 private:
  Url() = default;
  bool parseAuthority(std::string_view authority, std::string* error);
  bool parseTarget(std::string_view rest, std::string* error);

  Scheme scheme_ = Scheme::kHttp;
  bool ipv6_ = false;
  uint16_t port_ = 0;
  std::string host_;
  std::string target_;
};

}  // namespace libnet::http
