#include "net/http/HttpResponse.h"

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

}  // namespace

HttpResponse::HttpResponse(bool close) : close_(close), reason_("OK") {}

std::string_view HttpResponse::reasonPhrase(int code) {
  switch (code) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 426:
      return "Upgrade Required";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "";
  }
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
  appendSanitized(&headers_, name);
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
  if (!noContentLength) {
    out->append("Content-Length: ");
    appendNumber(out, contentLength());
    out->append("\r\n");
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
