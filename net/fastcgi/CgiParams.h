// fastcgi::cgiParams(): the CGI/1.1 variables (RFC 3875, 4.1) a FastCGI
// responder gets for an HTTP request, the set nginx's fastcgi.conf sends:
// SCRIPT_FILENAME, SCRIPT_NAME, DOCUMENT_URI, DOCUMENT_ROOT, REQUEST_URI,
// QUERY_STRING, REQUEST_METHOD, CONTENT_TYPE, CONTENT_LENGTH,
// SERVER_PROTOCOL, REQUEST_SCHEME, HTTPS ("on", only over TLS),
// GATEWAY_INTERFACE, SERVER_SOFTWARE, REMOTE_ADDR, REMOTE_PORT,
// SERVER_ADDR, SERVER_PORT, SERVER_NAME, REDIRECT_STATUS, and HTTP_* for
// each request field (name uppercased, '-' -> '_'; repeated fields joined
// with ", ", Cookie with "; "). Left out: Proxy (httpoxy, CVE-2016-5385),
// Content-Length and Content-Type (already CONTENT_*), Transfer-Encoding,
// and any field whose name has a character other than a letter, a digit or
// '-' (an '_' in it could pass for another field once mapped). Stateless.
#pragma once

#include <optional>
#include <string>

#include "net/SocketAddress.h"
#include "net/fastcgi/RecordEncoder.h"
#include "net/http/HttpRequest.h"

namespace libnet::fastcgi {

struct CgiContext {
  // DOCUMENT_ROOT; SCRIPT_FILENAME is it joined with the decoded path.
  std::string documentRoot;
  // When set, SCRIPT_FILENAME for every request (a front controller such as
  // "/srv/app/index.php"), whatever the path.
  std::string scriptFilename;
  // SERVER_NAME; empty: the Host field's host, else the local address.
  std::string serverName;
  bool https = false;
  std::optional<SocketAddress> local;
  std::optional<SocketAddress> peer;
};

// The path is percent-decoded, empty and "." segments dropped; nullopt if
// it cannot be (a bad escape, a NUL, a ".." segment): answer 400.
[[nodiscard]] std::optional<std::string> decodeScriptPath(std::string_view rawPath);

[[nodiscard]] std::optional<ParamList> cgiParams(const http::HttpRequest& request,
                                                 const CgiContext& context);

}  // namespace libnet::fastcgi
