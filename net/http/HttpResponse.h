// HttpResponse: builds the head (and, when held here, the body) of one
// HTTP/1.1 response and serializes it into an output Buffer. The server
// creates one per request on the connection's loop thread; not thread-safe.
//
// Framing is always explicit: every response that may have a body carries
// Content-Length (the body's size, or the length announced with
// setContentLength() for a body the caller sends itself, e.g. a file), so a
// keep-alive client never has to wait for the connection to close.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/UniqueFd.h"
#include "net/Buffer.h"

namespace libnet::http {

class HttpResponse {
 public:
  // close: answer with "Connection: close" (the caller then closes after
  // sending). Starts as 200 OK with no body.
  explicit HttpResponse(bool close);

  // The standard reason phrase for `code`, or "" for a code we do not know
  // (an empty reason is valid on the wire, RFC 9112 4).
  [[nodiscard]] static std::string_view reasonPhrase(int code);

  // Status with the standard reason phrase; code must be 100..999.
  void setStatus(int code);
  void setStatus(int code, std::string reason);
  // Status plus a short plain-text page saying it ("404 Not Found\n"): the
  // body of error answers.
  void setStatusPage(int code);
  [[nodiscard]] int status() const { return status_; }
  [[nodiscard]] const std::string& reason() const { return reason_; }

  // Content-Type; replaces an earlier one.
  void setContentType(std::string_view type);
  // Any other field, in the order added. Date, Content-Length and Connection
  // are written by appendToBuffer() and must not be added here. CR, LF and NUL
  // in name or value, and a colon in the name, are replaced by spaces, so that a value built from
  // request data (a redirect Location, say) cannot split the response.
  void addHeader(std::string_view name, std::string_view value);

  [[nodiscard]] const std::string& contentType() const { return contentType_; }
  // Calls fn(name, value) for each field added with addHeader(), in order
  // (for a front end that does not write HTTP/1.1 lines: HTTP/2).
  template <class Fn>
  void forEachHeader(Fn&& fn) const {
    std::string_view rest = headers_;
    while (!rest.empty()) {
      const size_t colon = rest.find(": ");
      const size_t end = rest.find("\r\n", colon);
      fn(rest.substr(0, colon), rest.substr(colon + 2, end - colon - 2));
      rest.remove_prefix(end + 2);
    }
  }

  // The body, held here and sent by appendToBuffer(); replaces an announced
  // length.
  void setBody(std::string body);
  [[nodiscard]] const std::string& body() const { return body_; }
  // Moves the body out (for a front end that sends it itself: HTTP/2).
  [[nodiscard]] std::string takeBody() { return std::move(body_); }
  // For a body sent separately after the head: the Content-Length to
  // announce. Drops a body set with setBody().
  void setContentLength(size_t length);
  // A file body: `length` bytes from its start, sent by HttpServer after the
  // head (read into the same write when small, sendfile(2) otherwise).
  void setFile(UniqueFd file, size_t length);
  [[nodiscard]] bool hasFile() const { return file_.valid(); }
  [[nodiscard]] UniqueFd takeFile() { return std::move(file_); }
  // The Content-Length that will be announced.
  [[nodiscard]] size_t contentLength() const;
  // A length is known: a body was set, or one announced.
  [[nodiscard]] bool hasLength() const { return announcedLength_.has_value() || !body_.empty(); }

  // How the end of a body sent after the head (ResponseWriter) is told when
  // its length is not known: kChunked writes "Transfer-Encoding: chunked"
  // instead of Content-Length; kUntilClose (an HTTP/1.0 client, which knows
  // no chunks) writes neither, and the body ends with the connection.
  enum class Framing : uint8_t { kContentLength, kChunked, kUntilClose };
  void setFraming(Framing framing) { framing_ = framing; }
  [[nodiscard]] Framing framing() const { return framing_; }

  void setCloseConnection(bool on) { close_ = on; }
  [[nodiscard]] bool closeConnection() const { return close_; }
  // Send "Connection: keep-alive" when not closing; an HTTP/1.0 client needs
  // it to keep the connection open, an HTTP/1.1 client assumes it.
  void setKeepAliveHeader(bool on) { keepAliveHeader_ = on; }

  // Writes the status line, "Date: <date>" (omitted when empty; pass a value
  // already formatted, see HttpDate.h), Content-Type, the added fields,
  // Content-Length, Connection, the blank line, then the body unless headOnly.
  // A HEAD response (headOnly) announces the same Content-Length as the GET
  // would but carries no body. 1xx and 204 responses get no Content-Length and
  // no body (RFC 9110 8.6 forbids it there); 304 gets no body. framing()
  // other than kContentLength: see setFraming().
  void appendToBuffer(Buffer* out, std::string_view date, bool headOnly = false) const;

 private:
  int status_ = 200;
  bool close_;
  bool keepAliveHeader_ = false;
  Framing framing_ = Framing::kContentLength;
  std::string reason_;
  std::string contentType_;
  std::string headers_;  // extra fields, already as "Name: value\r\n" lines
  std::string body_;
  std::optional<size_t> announcedLength_;
  UniqueFd file_;
};

}  // namespace libnet::http
