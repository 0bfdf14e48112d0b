// HttpRequest::peerAddress() and localAddress(), apart from the rest of HttpRequest: it is the
// one part that needs the connection (and so all of //net), and the fuzz
// targets (tools/fuzz.sh) build the request without it.
#include "net/TcpConnection.h"
#include "net/http/HttpRequest.h"

namespace libnet::http {

std::optional<SocketAddress> HttpRequest::peerAddress() const {
  const std::shared_ptr<const TcpConnection> conn = connection_.lock();
  if (!conn) return std::nullopt;
  return conn->peerAddress();
}

std::optional<SocketAddress> HttpRequest::localAddress() const {
  const std::shared_ptr<const TcpConnection> conn = connection_.lock();
  if (!conn) return std::nullopt;
  return conn->localAddress();
}

}  // namespace libnet::http
