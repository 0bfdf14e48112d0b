#include "net/fastcgi/CgiResponseParser.h"

#include <algorithm>
#include <array>
#include <utility>

namespace libnet::fastcgi {

namespace {

bool isTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  static constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return kSpecials.find(c) != std::string_view::npos;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
           return lower(x) == lower(y);
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Framing and routing belong to the server that answers the client.
bool serverOwned(std::string_view name) {
  static constexpr std::array<std::string_view, 9> kNames = {"Content-Length",
                                                             "Transfer-Encoding",
                                                             "Connection",
                                                             "Keep-Alive",
                                                             "Proxy-Connection",
                                                             "Upgrade",
                                                             "TE",
                                                             "Trailer",
                                                             "Date"};
  return std::any_of(kNames.begin(), kNames.end(),
                     [&](std::string_view n) { return equalsIgnoreCase(n, name); });
}

bool validValue(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == 0 || u == '\r' || u == '\n' || (u < 0x20 && u != '\t') || u == 0x7f;
  });
}

}  // namespace

CgiResponseParser::Status CgiResponseParser::fail(std::string message) {
  error_ = std::move(message);
  return Status::kError;
}

CgiResponseParser::Status CgiResponseParser::feed(std::string_view* data) {
  if (!error_.empty()) return Status::kError;
  if (done_) return Status::kDone;
  while (true) {
    const size_t lf = data->find('\n');
    const size_t take = lf == std::string_view::npos ? data->size() : lf + 1;
    headBytes_ += take;
    if (headBytes_ > maxHeadBytes_) {
      return fail("response head over " + std::to_string(maxHeadBytes_) + " bytes");
    }
    if (lf == std::string_view::npos) {
      partial_.append(*data);
      data->remove_prefix(take);
      return Status::kNeedMore;
    }
    std::string_view line = data->substr(0, lf);
    if (!partial_.empty()) {
      partial_.append(line);
      line = partial_;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const bool end = line.empty();
    const bool ok = end || parseLine(line);
    partial_.clear();
    data->remove_prefix(take);
    if (!ok) return Status::kError;
    if (end) return finishHead();
  }
}

bool CgiResponseParser::parseLine(std::string_view line) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    fail("response head line without a field name and colon");
    return false;
  }
  const std::string_view name = line.substr(0, colon);
  if (!std::all_of(name.begin(), name.end(), isTokenChar)) {
    fail("bad field name in the response head");
    return false;
  }
  const std::string_view value = trim(line.substr(colon + 1));
  if (!validValue(value)) {
    fail("control character in the response field " + std::string(name));
    return false;
  }
  if (equalsIgnoreCase(name, "Status")) return parseStatus(value);
  if (equalsIgnoreCase(name, "Content-Type")) {
    head_.setContentType(value);
    return true;
  }
  if (equalsIgnoreCase(name, "Location")) location_ = true;
  if (!serverOwned(name)) head_.addHeader(name, value);
  return true;
}

bool CgiResponseParser::parseStatus(std::string_view value) {
  if (status_) {
    fail("two Status fields in the response head");
    return false;
  }
  const bool digits = value.size() >= 3 && std::all_of(value.begin(), value.begin() + 3,
                                                       [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || (value.size() > 3 && value[3] != ' ')) {
    fail("bad Status field \"" + std::string(value.substr(0, 64)) + "\"");
    return false;
  }
  const int code = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
  if (code < 200 || code > 599) {
    fail("Status " + std::to_string(code) + " out of 200..599");
    return false;
  }
  status_ = code;
  reason_ = std::string(trim(value.substr(3)));
  return true;
}

CgiResponseParser::Status CgiResponseParser::finishHead() {
  done_ = true;
  const int code = status_.value_or(location_ ? 302 : 200);
  if (reason_.empty()) {
    head_.setStatus(code);
  } else {
    head_.setStatus(code, std::move(reason_));
  }
  return Status::kDone;
}

http::HttpResponse CgiResponseParser::takeHead() { return std::move(head_); }

}  // namespace libnet::fastcgi
