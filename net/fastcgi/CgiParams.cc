#include "net/fastcgi/CgiParams.h"

#include <algorithm>

#include "net/Version.h"

namespace libnet::fastcgi {

namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool percentDecode(std::string_view in, std::string* out) {
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hexValue(in[i + 1]);
      const int lo = hexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (c == '\0') return false;
    out->push_back(c);
  }
  return true;
}

std::string_view protocolName(http::Version version) {
  switch (version) {
    case http::Version::kHttp10:
      return "HTTP/1.0";
    case http::Version::kHttp11:
      return "HTTP/1.1";
    case http::Version::kHttp2:
      return "HTTP/2.0";
  }
  return "HTTP/1.1";
}

// "example.com:8080" -> "example.com", "[::1]:80" -> "[::1]".
std::string_view hostOf(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(0, close + 1);
  }
  return host.substr(0, host.find(':'));
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
           return lower(x) == lower(y);
         });
}

// HTTP_NAME for a field, or "" if the field is not passed on.
std::string cgiFieldName(std::string_view field) {
  for (std::string_view skipped :
       {"Proxy", "Content-Length", "Content-Type", "Transfer-Encoding"}) {
    if (equalsIgnoreCase(field, skipped)) return {};
  }
  std::string name = "HTTP_";
  for (char c : field) {
    if (c >= 'a' && c <= 'z') {
      name.push_back(static_cast<char>(c - 32));
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      name.push_back(c);
    } else if (c == '-') {
      name.push_back('_');
    } else {
      return {};
    }
  }
  return name;
}

void addFields(const http::HttpRequest& request, ParamList* params) {
  const size_t first = params->size();
  for (const auto& [field, value] : request.headers()) {
    std::string name = cgiFieldName(field);
    if (name.empty()) continue;
    auto same = std::find_if(params->begin() + static_cast<std::ptrdiff_t>(first), params->end(),
                             [&](const Param& p) { return p.first == name; });
    if (same == params->end()) {
      params->emplace_back(std::move(name), value);
    } else {
      same->second += name == "HTTP_COOKIE" ? "; " : ", ";
      same->second += value;
    }
  }
}

void addAddresses(const CgiContext& context, std::string_view host, ParamList* params) {
  auto ip = [](const std::optional<SocketAddress>& a) -> std::string {
    if (!a) return {};
    return a->isUnix() ? a->toString() : a->toIp();
  };
  auto port = [](const std::optional<SocketAddress>& a) -> std::string {
    if (!a || a->isUnix()) return {};
    return std::to_string(a->port());
  };
  params->emplace_back("REMOTE_ADDR", ip(context.peer));
  params->emplace_back("REMOTE_PORT", port(context.peer));
  params->emplace_back("SERVER_ADDR", ip(context.local));
  params->emplace_back("SERVER_PORT", port(context.local));
  std::string serverName = context.serverName;
  if (serverName.empty()) serverName = host.empty() ? ip(context.local) : std::string(host);
  params->emplace_back("SERVER_NAME", std::move(serverName));
}

}  // namespace

std::optional<std::string> decodeScriptPath(std::string_view rawPath) {
  std::string decoded;
  if (!percentDecode(rawPath, &decoded)) return std::nullopt;
  std::string path;
  path.reserve(decoded.size() + 1);
  size_t start = 0;
  while (start <= decoded.size()) {
    size_t end = decoded.find('/', start);
    if (end == std::string::npos) end = decoded.size();
    const std::string_view segment = std::string_view(decoded).substr(start, end - start);
    if (segment == "..") return std::nullopt;
    if (!segment.empty() && segment != ".") {
      path += '/';
      path += segment;
    }
    start = end + 1;
  }
  if (path.empty() || (!decoded.empty() && decoded.back() == '/')) path += '/';
  return path;
}

std::optional<ParamList> cgiParams(const http::HttpRequest& request, const CgiContext& context) {
  std::optional<std::string> path = decodeScriptPath(request.path());
  if (!path) return std::nullopt;
  ParamList params;
  params.reserve(24 + request.headers().size());
  params.emplace_back("SCRIPT_FILENAME", context.scriptFilename.empty()
                                             ? context.documentRoot + *path
                                             : context.scriptFilename);
  params.emplace_back("QUERY_STRING", request.query());
  params.emplace_back("REQUEST_METHOD", request.methodName());
  params.emplace_back("CONTENT_TYPE", request.header("Content-Type").value_or(""));
  const bool hasBody = !request.body().empty() || request.header("Content-Length");
  // A body streamed to the application (not in the request) has the
  // length its Content-Length announced.
  const auto announced = request.header("Content-Length");
  params.emplace_back("CONTENT_LENGTH", !hasBody ? std::string()
                                        : request.body().empty() && announced
                                            ? std::string(*announced)
                                            : std::to_string(request.body().size()));
  params.emplace_back("SCRIPT_NAME", *path);
  params.emplace_back("REQUEST_URI", request.target());
  params.emplace_back("DOCUMENT_URI", std::move(*path));
  params.emplace_back("DOCUMENT_ROOT", context.documentRoot);
  params.emplace_back("SERVER_PROTOCOL", protocolName(request.version()));
  params.emplace_back("REQUEST_SCHEME", context.https ? "https" : "http");
  if (context.https) params.emplace_back("HTTPS", "on");
  params.emplace_back("GATEWAY_INTERFACE", "CGI/1.1");
  params.emplace_back("SERVER_SOFTWARE", "libnet/" + std::to_string(LIBNET_VERSION_MAJOR) + "." +
                                             std::to_string(LIBNET_VERSION_MINOR) + "." +
                                             std::to_string(LIBNET_VERSION_PATCH));
  addAddresses(context, hostOf(request.header("Host").value_or("")), &params);
  params.emplace_back("REDIRECT_STATUS", "200");
  addFields(request, &params);
  return params;
}

}  // namespace libnet::fastcgi
