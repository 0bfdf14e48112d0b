// HttpRequest: one parsed HTTP/1.x request, a plain value. HttpParser fills
// it; the server reads it on the connection's loop thread and may keep a copy.
// clear() empties it but keeps every string's capacity (header names and
// values included), so a connection that reuses one request object stops
// allocating once it has seen its largest request.
// Not thread-safe; copyable and movable like any value.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/SocketAddress.h"

namespace libnet {
class TcpConnection;
}  // namespace libnet

namespace libnet::http {

enum class Method { kGet, kHead, kPost, kPut, kDelete, kOptions, kPatch, kTrace, kConnect };
enum class Version { kHttp10, kHttp11, kHttp2 };

// "GET", "HEAD", ... as sent on the wire.
[[nodiscard]] std::string_view methodName(Method method);
// "HTTP/1.0", "HTTP/1.1" or "HTTP/2".
[[nodiscard]] std::string_view versionName(Version version);
// The method with this name (case-sensitive, RFC 9110 9.1); nullopt for one
// this library does not implement (a 501).
[[nodiscard]] std::optional<Method> methodFromName(std::string_view name);

class HttpParser;

class HttpRequest {
 public:
  using Header = std::pair<std::string, std::string>;

  HttpRequest() = default;
  // Copies the request, not the pool of spare strings kept for reuse.
  HttpRequest(const HttpRequest& other);
  HttpRequest& operator=(const HttpRequest& other);
  HttpRequest(HttpRequest&&) noexcept = default;
  HttpRequest& operator=(HttpRequest&&) noexcept = default;

  [[nodiscard]] Method method() const { return method_; }
  [[nodiscard]] std::string_view methodName() const { return http::methodName(method_); }
  // HTTP/1.2 and later 1.x minors are reported as kHttp11 (RFC 9110 2.5).
  [[nodiscard]] Version version() const { return version_; }

  // The request-target exactly as sent.
  [[nodiscard]] const std::string& target() const { return target_; }
  // The path component, not percent-decoded: the target before '?' for the
  // origin form; the path after the authority ("/" if none) for the absolute
  // form ("http://host/p?q"); "*" for "OPTIONS *"; the authority for CONNECT.
  [[nodiscard]] const std::string& path() const { return path_; }
  // The part after the first '?', without it; empty when there is none.
  [[nodiscard]] const std::string& query() const { return query_; }

  // The first field with this name (ASCII case-insensitive), value trimmed of
  // surrounding whitespace; nullopt if absent. The view lives as long as the
  // request is neither changed nor cleared.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
  // Every field line in the order received, names as sent, values trimmed.
  [[nodiscard]] const std::vector<Header>& headers() const { return headers_; }

  // The payload; de-chunked when the request used chunked framing.
  [[nodiscard]] const std::string& body() const { return body_; }
  [[nodiscard]] std::string& body() { return body_; }

  // Whether the connection may carry another request after this one: HTTP/1.1
  // unless a Connection field lists "close"; HTTP/1.0 only when one lists
  // "keep-alive" and none lists "close" (tokens case-insensitive, across all
  // Connection fields).
  [[nodiscard]] bool keepAlive() const { return keepAlive_; }

  // Empties the request; the connection it came on (setConnection()) stays.
  void clear();

  // The address of the client the request came from, as its connection
  // sees it (with the PROXY protocol on, the client the proxy names);
  // nullopt once that connection is gone, or for a request that no server
  // read. A copy of the request keeps asking the same connection.
  [[nodiscard]] std::optional<SocketAddress> peerAddress() const;
  // The server's end of that connection (the address the client reached);
  // nullopt likewise.
  [[nodiscard]] std::optional<SocketAddress> localAddress() const;
  // For the server that reads requests: the connection they arrive on.
  // Held weakly, and looked up only when asked: nothing per request.
  void setConnection(std::weak_ptr<const TcpConnection> connection) {
    connection_ = std::move(connection);
  }

  // For a front end other than HttpParser (HTTP/2, net/http2/), on a cleared
  // request: the method, the version and the request-target, split into path
  // and query as HttpParser splits them. Returns 400 for a target that does
  // not fit the method (the request is then not to be answered by a
  // handler), else 0.
  [[nodiscard]] int assign(Method method, Version version, std::string_view target);
  // Appends a field as received (the caller has checked its syntax).
  void appendHeader(std::string_view name, std::string_view value) { addHeader(name, value); }

 private:
  friend class HttpParser;

  // Appends a field, reusing the strings of a field dropped by clear().
  void addHeader(std::string_view name, std::string_view value);

  Method method_ = Method::kGet;
  Version version_ = Version::kHttp11;
  bool keepAlive_ = true;
  std::string target_;
  std::string path_;
  std::string query_;
  static constexpr size_t kTypicalHeaders = 8;
  std::vector<Header> headers_;
  // Fields from earlier requests, kept for their string capacity.
  std::vector<Header> spareHeaders_;
  std::string body_;
  std::weak_ptr<const TcpConnection> connection_;
};

}  // namespace libnet::http
