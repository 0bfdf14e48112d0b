// The HTTP client's private halves of a request (//net/http:client only):
// PreparedRequest, a Request checked and formatted once (the bytes of its
// request line and header section, reused for a retry), and Exchange, one
// request in progress: where it is (an origin's queue, a connection), its
// timers, its redirect and retry budget. Loop thread of their HttpClient.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "net/TimerId.h"
#include "net/http/ClientTypes.h"
#include "net/http/Url.h"

namespace libnet::http {
using ResponseCallback = std::function<void(FetchResult)>;
}  // namespace libnet::http

namespace libnet::http::detail {

class ClientConnection;

struct PreparedRequest {
  Request request;  // as given (a redirect starts from it)
  std::optional<Url> url;
  std::string originKey;  // Url::origin()
  // Request line, header section and an in-memory body: one send.
  std::string bytes;
  bool head = false;        // HEAD: the answer has no body
  bool idempotent = false;  // RFC 9110 9.2.2

  // Checks and formats `request`; the error's message says what is wrong.
  [[nodiscard]] static std::optional<ClientError> prepare(Request request,
                                                          const std::string& userAgent,
                                                          std::shared_ptr<PreparedRequest>* out);
};

struct Exchange {
  std::shared_ptr<const PreparedRequest> request;
  ResponseCallback callback;
  int redirectsLeft = 0;
  bool retried = false;    // sent again once under the retry rule
  bool freshOnly = false;  // must go to a new connection (the retry)
  bool done = false;
  bool bodyHanded = false;                 // a piece went to the body sink
  ClientConnection* connection = nullptr;  // while a connection carries it
  TimerId requestTimer;
};

}  // namespace libnet::http::detail
