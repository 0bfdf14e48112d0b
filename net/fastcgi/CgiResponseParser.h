// fastcgi::CgiResponseParser: the CGI/1.1 response head (RFC 3875, 6) at
// the front of an application's FCGI_STDOUT, turned into an HttpResponse
// head. Status ("404 Not Found") sets the status; Location without Status
// is a 302 (client redirect; local redirects are not done); Content-Type
// is kept; the fields that frame or route the message are the server's
// own and are dropped (Content-Length, Transfer-Encoding, Connection,
// Keep-Alive, Proxy-Connection, Upgrade, TE, Trailer, Date); every other
// field is passed on as it came. Lines end in LF or CRLF; the head ends at
// an empty line. Strict: a line that is not "name: value" with a token
// name, an obsolete folded line, a bad Status, or a head longer than the
// limit is an error. Incremental; not thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "net/http/HttpResponse.h"

namespace libnet::fastcgi {

class CgiResponseParser {
 public:
  enum class Status { kNeedMore, kDone, kError };

  static constexpr size_t kDefaultMaxHeadBytes = 64 * 1024;

  explicit CgiResponseParser(size_t maxHeadBytes = kDefaultMaxHeadBytes)
      : maxHeadBytes_(maxHeadBytes) {}

  // Takes head bytes off the front of `*data`; on kDone what is left in
  // `*data` is body. After kDone or kError, nothing more is taken.
  Status feed(std::string_view* data);

  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] const std::string& error() const { return error_; }
  // The head (status, reason, Content-Type, fields); after kDone.
  [[nodiscard]] http::HttpResponse takeHead();

 private:
  bool parseLine(std::string_view line);
  bool parseStatus(std::string_view value);
  Status fail(std::string message);
  Status finishHead();

  size_t maxHeadBytes_;
  size_t headBytes_ = 0;
  std::string partial_;  // an unfinished line carried between feeds
  bool done_ = false;
  std::optional<int> status_;
  std::string reason_;
  bool location_ = false;
  http::HttpResponse head_{false};
  std::string error_;
};

}  // namespace libnet::fastcgi
