#include "net/http/ClientExchange.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "net/http/HttpChars.h"
#include "net/http/HttpSyntax.h"

namespace libnet::http::detail {

namespace {

bool isIdempotent(Method method) {
  switch (method) {
    case Method::kGet:
    case Method::kHead:
    case Method::kPut:
    case Method::kDelete:
    case Method::kOptions:
    case Method::kTrace:
      return true;
    default:
      return false;
  }
}

// Methods whose requests carry a body by definition: they send
// "Content-Length: 0" when empty (RFC 9110 8.6).
bool expectsBody(Method method) {
  return method == Method::kPost || method == Method::kPut || method == Method::kPatch;
}

void appendField(std::string* out, std::string_view name, std::string_view value) {
  out->append(name);
  out->append(": ");
  out->append(value);
  out->append("\r\n");
}

// Finds the length of a file body given by path when the caller left it 0.
std::optional<ClientError> sizeFileBody(Request* request) {
  if (request->bodyFile.empty() || request->bodyLength != 0) return std::nullopt;
  struct stat st {};
  if (::stat(request->bodyFile.c_str(), &st) != 0) {
    return ClientError{ClientError::Kind::kFile,
                       "cannot stat " + request->bodyFile + ": " + std::strerror(errno)};
  }
  request->bodyLength = static_cast<size_t>(st.st_size);
  return std::nullopt;
}

ClientError badRequest(std::string message) {
  return ClientError{ClientError::Kind::kBadRequest, std::move(message)};
}

// The body's framing is the client's: it writes the one Content-Length,
// from the body it sends, and never a Transfer-Encoding. A caller's
// Content-Length that says anything else would let the server read another
// length than was sent (with "Content-Length: 0" the body arrives as a
// second request: smuggling), and Transfer-Encoding next to Content-Length
// is forbidden (RFC 9112 6.2). Both are refused before anything is sent;
// *given says whether the caller named a (matching) Content-Length.
std::optional<ClientError> checkFraming(const Request& request, size_t length, bool* given) {
  for (const auto& [name, value] : request.headers) {
    if (equalsIgnoreCase(name, "transfer-encoding")) {
      return badRequest("Transfer-Encoding: " + value +
                        ": the client frames the body itself (Content-Length)");
    }
    if (!equalsIgnoreCase(name, "content-length")) continue;
    size_t stated = 0;
    if (parseContentLength(value, &stated) != NumberParse::kValid || stated != length) {
      return badRequest("Content-Length: " + value + " does not match the body (" +
                        std::to_string(length) + " bytes)");
    }
    *given = true;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ClientError> PreparedRequest::prepare(Request request, const std::string& userAgent,
                                                    std::shared_ptr<PreparedRequest>* out) {
  auto prepared = std::make_shared<PreparedRequest>();
  std::string why;
  prepared->url = Url::parse(request.url, &why);
  if (!prepared->url) return badRequest(request.url + ": " + why);
  if (prepared->url->scheme() != Url::Scheme::kHttp &&
      prepared->url->scheme() != Url::Scheme::kHttps) {
    return badRequest(request.url + ": not an http(s) URL");
  }
  if (std::optional<ClientError> error = sizeFileBody(&request)) return error;
  bool hasHost = false;
  bool hasAgent = false;
  for (const auto& [name, value] : request.headers) {
    // CR or LF in a value would let a caller's data start a header of its own.
    if (name.empty() || !allOf(name, kTokenChar) || !isFieldValue(value)) {
      return badRequest("invalid header: " + name);
    }
    hasHost |= equalsIgnoreCase(name, "host");
    hasAgent |= equalsIgnoreCase(name, "user-agent");
  }
  const size_t length = request.hasFileBody() ? request.bodyLength : request.body.size();
  bool lengthGiven = false;
  if (std::optional<ClientError> error = checkFraming(request, length, &lengthGiven)) {
    return error;
  }
  const Url& url = *prepared->url;
  std::string& bytes = prepared->bytes;
  bytes.append(methodName(request.method));
  bytes.append(" ");
  bytes.append(url.target());
  bytes.append(" HTTP/1.1\r\n");
  if (!hasHost) appendField(&bytes, "Host", url.hostHeader());
  if (!hasAgent && !userAgent.empty()) appendField(&bytes, "User-Agent", userAgent);
  for (const auto& [name, value] : request.headers) {
    if (!equalsIgnoreCase(name, "content-length")) appendField(&bytes, name, value);
  }
  if (lengthGiven || length > 0 || expectsBody(request.method)) {
    appendField(&bytes, "Content-Length", std::to_string(length));
  }
  bytes.append("\r\n");
  if (!request.hasFileBody()) bytes.append(request.body);
  prepared->originKey = url.origin();
  prepared->head = request.method == Method::kHead;
  prepared->idempotent = isIdempotent(request.method);
  prepared->request = std::move(request);
  *out = std::move(prepared);
  return std::nullopt;
}

}  // namespace libnet::http::detail
