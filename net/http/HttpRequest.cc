#include "net/http/HttpRequest.h"

#include <algorithm>

#include "net/http/HttpChars.h"
#include "net/http/RequestTarget.h"

namespace libnet::http {

std::string_view methodName(Method method) {
  switch (method) {
    case Method::kGet:
      return "GET";
    case Method::kHead:
      return "HEAD";
    case Method::kPost:
      return "POST";
    case Method::kPut:
      return "PUT";
    case Method::kDelete:
      return "DELETE";
    case Method::kOptions:
      return "OPTIONS";
    case Method::kPatch:
      return "PATCH";
    case Method::kTrace:
      return "TRACE";
    case Method::kConnect:
      return "CONNECT";
  }
  return "?";
}

std::string_view versionName(Version version) {
  switch (version) {
    case Version::kHttp10:
      return "HTTP/1.0";
    case Version::kHttp11:
      return "HTTP/1.1";
    case Version::kHttp2:
      return "HTTP/2";
  }
  return "?";
}

std::optional<Method> methodFromName(std::string_view name) {
  struct Entry {
    std::string_view name;
    Method method;
  };
  // Most frequent first; a mismatch usually costs one size comparison.
  static constexpr Entry kMethods[] = {
      {"GET", Method::kGet},     {"POST", Method::kPost},     {"HEAD", Method::kHead},
      {"PUT", Method::kPut},     {"DELETE", Method::kDelete}, {"OPTIONS", Method::kOptions},
      {"PATCH", Method::kPatch}, {"TRACE", Method::kTrace},   {"CONNECT", Method::kConnect},
  };
  for (const Entry& entry : kMethods) {
    if (entry.name == name) return entry.method;
  }
  return std::nullopt;
}

int HttpRequest::assign(Method method, Version version, std::string_view target) {
  method_ = method;
  version_ = version;
  target_.assign(target);
  const detail::RequestTarget parts = detail::splitRequestTarget(target_, method_);
  if (!parts.error.empty()) return 400;
  // Views into target_: copied out before anything else changes it.
  path_.assign(parts.path);
  query_.assign(parts.query);
  return 0;
}

HttpRequest::HttpRequest(const HttpRequest& other)
    : method_(other.method_),
      version_(other.version_),
      keepAlive_(other.keepAlive_),
      target_(other.target_),
      path_(other.path_),
      query_(other.query_),
      headers_(other.headers_),
      body_(other.body_),
      connection_(other.connection_) {}

HttpRequest& HttpRequest::operator=(const HttpRequest& other) {
  if (this == &other) return *this;
  clear();
  method_ = other.method_;
  version_ = other.version_;
  keepAlive_ = other.keepAlive_;
  target_ = other.target_;
  path_ = other.path_;
  query_ = other.query_;
  for (const Header& h : other.headers_) addHeader(h.first, h.second);
  body_ = other.body_;
  connection_ = other.connection_;
  return *this;
}

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const Header& h : headers_) {
    if (detail::equalsIgnoreCase(h.first, name)) return std::string_view(h.second);
  }
  return std::nullopt;
}

void HttpRequest::clear() {
  method_ = Method::kGet;
  version_ = Version::kHttp11;
  keepAlive_ = true;
  target_.clear();
  path_.clear();
  query_.clear();
  body_.clear();
  // Moving a string hands over its heap block, so the spare pool keeps the
  // capacity that vector::clear() would free. Pushed last field first, so
  // addHeader() pops them in the old order: requests from one client repeat
  // their fields, and each string then gets a value of the size it had.
  if (spareHeaders_.empty()) {
    // None kept yet (after a connection's first request): the fields become
    // the spares as they are, vector and all, which costs no allocation (a
    // short connection makes no other request).
    spareHeaders_.swap(headers_);
    std::reverse(spareHeaders_.begin(), spareHeaders_.end());
  } else {
    spareHeaders_.reserve(spareHeaders_.size() + headers_.size());
    for (auto it = headers_.rbegin(); it != headers_.rend(); ++it) {
      spareHeaders_.push_back(std::move(*it));
    }
  }
  headers_.clear();
}

void HttpRequest::addHeader(std::string_view name, std::string_view value) {
  // Room for a typical request's fields at once, not 1, 2, 4, 8 in turn.
  if (headers_.capacity() == 0) headers_.reserve(kTypicalHeaders);
  if (spareHeaders_.empty()) {
    headers_.emplace_back(name, value);
    return;
  }
  headers_.push_back(std::move(spareHeaders_.back()));
  spareHeaders_.pop_back();
  headers_.back().first.assign(name);
  headers_.back().second.assign(value);
}

}  // namespace libnet::http
