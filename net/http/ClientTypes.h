// The values of the HTTP client's API (net/http/HttpClient.h): a Request with
// its per-request options, the Response, the ClientError that replaces it
// when there is none, and FetchResult, which holds one of the two. Plain
// values; any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/Duration.h"
#include "net/http/HttpRequest.h"

namespace libnet::http {

struct RequestOptions {
  // Zero turns a timeout off.
  // Name lookup, TCP connect and TLS handshake of a new connection.
  Duration connectTimeout = std::chrono::seconds(10);
  // The whole request, from request() to the last byte of the response,
  // time in the pool's queue and redirects included.
  Duration requestTimeout = std::chrono::seconds(0);
  // Between two bytes of the response once the request is sent (and before
  // the first one).
  Duration idleTimeout = std::chrono::seconds(30);
  bool followRedirects = false;
  int maxRedirects = 5;
  // Set: the body is handed to it piece by piece as it arrives (valid for
  // the call only) instead of being kept in Response::body, and is not
  // bounded by maxBodyBytes. A retry never happens once a piece was handed.
  std::function<void(std::string_view)> bodySink{};
  // Drop the body without keeping or handing it anywhere (load generators).
  bool discardBody = false;
  // Copy the response's headers into Response::headers (off: status only;
  // saves an allocation per header when nobody reads them).
  bool keepHeaders = true;
};

struct Request {
  Method method = Method::kGet;
  std::string url;  // http:// or https://
  // Sent as given, after Host (and before Content-Length, which the client
  // writes itself). A Host here replaces the client's. The body's framing is
  // the client's: a Transfer-Encoding here, or a Content-Length that is not
  // the body's length, is refused (kBadRequest) before anything is sent; a
  // Content-Length equal to it is sent once, as the client's.
  std::vector<std::pair<std::string, std::string>> headers{};
  // The body, from memory...
  std::string body{};
  // ...or from a file: a path (opened for each send), or an fd the caller
  // keeps open until the callback ran (read with sendfile at bodyFileOffset,
  // its file position untouched). bodyLength bytes are sent.
  std::string bodyFile{};
  int bodyFd = -1;
  off_t bodyFileOffset = 0;
  size_t bodyLength = 0;
  RequestOptions options{};

  [[nodiscard]] bool hasFileBody() const { return !bodyFile.empty() || bodyFd >= 0; }
};

struct Response {
  int status = 0;
  std::string reason;
  int versionMinor = 1;  // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The URL that answered, when a redirect was followed; empty otherwise.
  std::string url;

  // The first header with this name, case-insensitive.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

struct ClientError {
  enum class Kind : uint8_t {
    kBadRequest,            // an invalid URL or request (nothing was sent)
    kDns,                   // the name did not resolve
    kConnectRefused,        // every address refused
    kConnectFailed,         // another connect error (unreachable, ...)
    kConnectTimeout,        // connect (lookup, TCP, TLS) took longer than allowed
    kTls,                   // TLS handshake failed: certificate or name not verified, or protocol
    kRequestTimeout,        // the whole request took longer than allowed
    kIdleTimeout,           // no byte of the response for idleTimeout
    kClosedBeforeResponse,  // the connection ended before any byte of the response
    kTruncated,             // the connection ended inside the response
    kTooLarge,              // a response limit passed (headers, body)
    kMalformed,             // not a valid HTTP/1.x response
    kTooManyRedirects,
    kQueueFull,  // the origin's queue of waiting requests is full
    kFile,       // the body file could not be opened
    kCancelled,
  };
  Kind kind = Kind::kBadRequest;
  std::string message;  // names the cause, e.g. "connection refused: 127.0.0.1:1"
};

[[nodiscard]] std::string_view kindName(ClientError::Kind kind);

// A Response, or the ClientError that explains why there is none.
class FetchResult {
 public:
  FetchResult(Response response) : response_(std::move(response)) {}  // NOLINT
  FetchResult(ClientError error) : error_(std::move(error)) {}        // NOLINT

  [[nodiscard]] bool ok() const { return !error_.has_value(); }
  [[nodiscard]] const Response& response() const { return response_; }
  [[nodiscard]] Response& response() { return response_; }
  [[nodiscard]] const ClientError& error() const { return *error_; }
  // The error's message, or "" on success.
  [[nodiscard]] std::string_view errorMessage() const {
    return error_ ? std::string_view(error_->message) : std::string_view();
  }

 private:
  Response response_;
  std::optional<ClientError> error_;
};

}  // namespace libnet::http
