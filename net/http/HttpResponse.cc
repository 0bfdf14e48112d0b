#include "net/http/HttpResponse.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <charconv>

namespace libnet::http {

namespace {

// Appends s with CR, LF and NUL turned into spaces.
void appendSanitized(std::string* out, std::string_view s) {
  const size_t start = out->size();
  out->append(s);
  for (size_t i = start; i < out->size(); ++i) {
    char& c = (*out)[i];
    if (c == '\r' || c == '\n' || c == '\0') c = ' ';
  }
}

void appendNumber(Buffer* out, size_t n) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  assert(ec == std::errc());
  out->append(std::string_view(digits, static_cast<size_t>(end - digits)));
}

struct Reason {
  int code;
  std::string_view reason;
};

// The reason phrases of RFC 9110 15 for the codes a server is likely to send,
// sorted by code for reasonPhrase()'s binary search (the static_assert stops
// an entry added out of order from compiling).
constexpr std::array<Reason, 38> kReasons{{
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {204, "No Content"},
    {206, "Partial Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {416, "Range Not Satisfiable"},
    {417, "Expectation Failed"},
    {426, "Upgrade Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
}};
static_assert(std::is_sorted(kReasons.begin(), kReasons.end(),
                             [](const Reason& a, const Reason& b) { return a.code < b.code; }));

}  // namespace

HttpResponse::HttpResponse(bool close) : close_(close), reason_("OK") {}

std::string_view HttpResponse::reasonPhrase(int code) {
  const auto* it = std::lower_bound(kReasons.begin(), kReasons.end(), code,
                                    [](const Reason& r, int c) { return r.code < c; });
  return it != kReasons.end() && it->code == code ? it->reason : std::string_view();
}

void HttpResponse::setStatus(int code) {
  assert(code >= 100 && code <= 999);
  status_ = code;
  reason_.assign(reasonPhrase(code));
}

void HttpResponse::setStatus(int code, std::string reason) {
  assert(code >= 100 && code <= 999);
  status_ = code;
  reason_ = std::move(reason);
  for (char& c : reason_) {
    if (c == '\r' || c == '\n' || c == '\0') c = ' ';
  }
}

void HttpResponse::setContentType(std::string_view type) {
  contentType_.clear();
  appendSanitized(&contentType_, type);
}

void HttpResponse::addHeader(std::string_view name, std::string_view value) {
  const size_t nameStart = headers_.size();
  appendSanitized(&headers_, name);
  // A colon would end the name early on the wire, and in forEachHeader().
  std::replace(headers_.begin() + static_cast<std::ptrdiff_t>(nameStart), headers_.end(), ':', ' ');
  headers_.append(": ");
  appendSanitized(&headers_, value);
  headers_.append("\r\n");
}

void HttpResponse::setStatusPage(int code) {
  setStatus(code);
  setContentType("text/plain; charset=utf-8");
  std::string page = std::to_string(code);
  page += ' ';
  page += reason_;
  page += '\n';
  setBody(std::move(page));
}

void HttpResponse::setBody(std::string body) {
  body_ = std::move(body);
  announcedLength_.reset();
  file_.reset();
}

void HttpResponse::setFile(UniqueFd file, size_t length) {
  setContentLength(length);
  file_ = std::move(file);
}

void HttpResponse::setContentLength(size_t length) {
  body_.clear();
  file_.reset();
  announcedLength_ = length;
}

size_t HttpResponse::contentLength() const { return announcedLength_.value_or(body_.size()); }

void HttpResponse::appendToBuffer(Buffer* out, std::string_view date, bool headOnly) const {
  const bool informational = status_ < 200;
  const bool noContentLength = informational || status_ == 204;
  const bool noBody = headOnly || noContentLength || status_ == 304;

  char statusCode[4] = {static_cast<char>('0' + status_ / 100 % 10),
                        static_cast<char>('0' + status_ / 10 % 10),
                        static_cast<char>('0' + status_ % 10), ' '};
  // One reservation for the whole message instead of a check-and-grow per
  // piece; 96 covers the fixed text and the numbers.
  out->ensureWritableBytes(96 + reason_.size() + date.size() + contentType_.size() +
                           headers_.size() + (noBody ? 0 : body_.size()));
  out->append("HTTP/1.1 ");
  out->append(std::string_view(statusCode, sizeof statusCode));
  out->append(reason_);
  out->append("\r\n");
  if (!date.empty()) {
    out->append("Date: ");
    out->append(date);
    out->append("\r\n");
  }
  if (!contentType_.empty()) {
    out->append("Content-Type: ");
    out->append(contentType_);
    out->append("\r\n");
  }
  out->append(headers_);
  if (!noContentLength && framing_ == Framing::kContentLength) {
    out->append("Content-Length: ");
    appendNumber(out, contentLength());
    out->append("\r\n");
  } else if (!noContentLength && framing_ == Framing::kChunked) {
    out->append("Transfer-Encoding: chunked\r\n");
  }
  if (close_) {
    out->append("Connection: close\r\n");
  } else if (keepAliveHeader_) {
    out->append("Connection: keep-alive\r\n");
  }
  out->append("\r\n");
  if (!noBody) out->append(body_);
}

}  // namespace libnet::http
