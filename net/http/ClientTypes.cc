#include "net/http/ClientTypes.h"

namespace libnet::http {

std::string_view kindName(ClientError::Kind kind) {
  using Kind = ClientError::Kind;
  switch (kind) {
    case Kind::kBadRequest:
      return "bad request";
    case Kind::kDns:
      return "DNS failure";
    case Kind::kConnectRefused:
      return "connection refused";
    case Kind::kConnectFailed:
      return "connect failed";
    case Kind::kConnectTimeout:
      return "connect timeout";
    case Kind::kTls:
      return "TLS failure";
    case Kind::kRequestTimeout:
      return "request timeout";
    case Kind::kIdleTimeout:
      return "idle timeout";
    case Kind::kClosedBeforeResponse:
      return "closed before response";
    case Kind::kTruncated:
      return "truncated response";
    case Kind::kTooLarge:
      return "response too large";
    case Kind::kMalformed:
      return "malformed response";
    case Kind::kTooManyRedirects:
      return "too many redirects";
    case Kind::kQueueFull:
      return "queue full";
    case Kind::kFile:
      return "body file error";
    case Kind::kCancelled:
      return "cancelled";
  }
  return "error";
}

}  // namespace libnet::http
