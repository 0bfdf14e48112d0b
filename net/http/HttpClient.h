// HttpClient: an HTTP/1.1 client on one EventLoop, with a connection pool
// per origin (scheme, host, port). docs/http-client.md has the whole model.
//
//   HttpClient client(&loop, {});
//   client.request({.url = "https://example.com/"}, [](FetchResult r) {
//     if (r.ok()) use(r.response().status, r.response().body);
//     else log(r.error().message);
//   });
//
// Each pooled connection is one TcpClient (connect by name with Happy
// Eyeballs through the resolver, TLS through net/tls with the certificate
// and host name verified unless Options::verifyPeer is off, TCP_NODELAY on).
// A request goes to an idle connection of its origin (the most recently used
// one), else to a new one while the origin has fewer than
// maxConnectionsPerOrigin, else waits in the origin's queue (bounded:
// maxQueuedPerOrigin, then ClientError::kQueueFull). A connection is kept
// for the next request after a complete response that allows it (HTTP/1.1
// without "Connection: close", not close-delimited, and no byte after the
// response), from the end of that loop turn; one that receives bytes or EOF
// while idle, or stays idle for idleTimeout, is closed, and one is checked
// right before it takes a request (nothing from the server at its socket).
//
// Retry rule: a request sent on a reused connection that ends before any
// byte of the response arrived is sent again once, on a new connection, if
// its method is idempotent (GET, HEAD, PUT, DELETE, OPTIONS, TRACE): the
// server may have closed the idle connection just as the request left. A
// POST or PATCH may have been acted on, so it fails with
// kClosedBeforeResponse instead. Nothing is retried once a byte of the
// response (an interim 1xx included) arrived, and a truncated response is
// never reported as success.
//
// Threads: loop thread only, construction and destruction included; the
// callback runs on the loop thread, never inside request(). Destroying the
// client closes its connections and drops pending callbacks uncalled.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/Duration.h"
#include "net/TimerId.h"
#include "net/http/ClientTypes.h"
#include "net/http/HttpResponseParser.h"

namespace libnet {
class ConnectionLayer;
class EventLoop;
class NameResolver;
}  // namespace libnet

namespace libnet::tls {
class Context;
}  // namespace libnet::tls

namespace libnet::http {

namespace detail {
class ClientConnection;
struct Exchange;
struct PreparedRequest;
}  // namespace detail

using ResponseCallback = std::function<void(FetchResult)>;
// A request checked and formatted once, to be sent any number of times
// (HttpClient::prepare()): a load generator formats nothing per request.
// Immutable; may be shared by clients on any threads.
using PreparedRequestPtr = std::shared_ptr<const detail::PreparedRequest>;

// Names one request, to cancel it; empty once the request is done.
class RequestHandle {
 public:
  RequestHandle() = default;
  [[nodiscard]] bool pending() const;

 private:
  friend class HttpClient;
  explicit RequestHandle(std::weak_ptr<detail::Exchange> exchange)
      : exchange_(std::move(exchange)) {}
  std::weak_ptr<detail::Exchange> exchange_;
};

class HttpClient {
 public:
  struct Options {
    size_t maxConnectionsPerOrigin = 8;
    size_t maxQueuedPerOrigin = 1024;
    // A pooled connection idle this long is closed (zero: never).
    Duration idleTimeout = std::chrono::seconds(60);
    // Null: the client makes its own dns::Resolver (resolv.conf's servers).
    std::shared_ptr<NameResolver> resolver{};
    // TLS: the CAs trusted (PEM file; empty: the system's store), and
    // whether the server's certificate and name are checked at all.
    std::string caFile{};
    bool verifyPeer = true;
    // Sent unless the request has its own; empty: none.
    std::string userAgent = "libnet-http-client";
    HttpResponseParser::Limits limits{};
  };

  // Counters of this client since it was made (loop thread).
  struct Stats {
    uint64_t connectionsOpened = 0;  // TCP (and TLS) connections established
    uint64_t requestsSent = 0;
    uint64_t reusedRequests = 0;  // sent on a connection that had served one before
    uint64_t retries = 0;         // requests sent again under the retry rule
    uint64_t responses = 0;       // complete final responses
    uint64_t errors = 0;          // requests ended with a ClientError
  };

  HttpClient(EventLoop* loop, Options options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts `request`; `callback` runs once with its result, later, on the
  // loop thread (unless cancelled or the client is destroyed first).
  RequestHandle request(Request request, ResponseCallback callback);
  // The request checked and formatted, or null with *error set (a bad URL,
  // a header with a line break, a body file that is not there).
  [[nodiscard]] PreparedRequestPtr prepare(Request request, ClientError* error) const;
  RequestHandle request(PreparedRequestPtr request, ResponseCallback callback);
  // Ends the request without calling its callback. A connection it was using
  // is closed (its response may be under way), never pooled.
  void cancel(const RequestHandle& handle);

  // Back-pressure for a body handed to a sink: stop reading the request's
  // response, and start again (from the loop's queue). No effect on a
  // request that is done or not yet on a connection; the idle timeout does
  // not count the pause.
  void pauseResponse(const RequestHandle& handle);
  void resumeResponse(const RequestHandle& handle);

  [[nodiscard]] const Stats& stats() const { return stats_; }
  [[nodiscard]] EventLoop* loop() const { return loop_; }
  [[nodiscard]] const Options& options() const { return options_; }
  // Connections open or opening to all origins, and those idle in a pool.
  [[nodiscard]] size_t connectionCount() const;
  [[nodiscard]] size_t idleConnectionCount() const;

 private:
  friend class detail::ClientConnection;
  struct Pool;
  struct SettleHook;

  void start(std::shared_ptr<detail::Exchange> exchange);
  void dispatch(Pool& pool);
  detail::ClientConnection* takeIdle(Pool& pool);
  void assign(Pool& pool, std::shared_ptr<detail::ClientConnection> conn,
              std::shared_ptr<detail::Exchange> exchange);
  void openConnection(Pool& pool, std::shared_ptr<detail::Exchange> exchange);
  std::shared_ptr<const ConnectionLayer> layerFor(const detail::PreparedRequest& request);
  Pool& poolFor(const detail::PreparedRequest& request);

  // From a connection (detail::ClientConnection).
  void onResponse(detail::ClientConnection* conn, std::shared_ptr<detail::Exchange> exchange,
                  Response response, bool reusable);
  void onFailure(detail::ClientConnection* conn, std::shared_ptr<detail::Exchange> exchange,
                 ClientError error, bool retryable);
  void onIdleClosed(detail::ClientConnection* conn);

  void finish(const std::shared_ptr<detail::Exchange>& exchange, FetchResult result);
  void failLater(std::shared_ptr<detail::Exchange> exchange, ClientError error);
  bool redirect(const std::shared_ptr<detail::Exchange>& exchange, const Response& response);
  void retire(Pool& pool, detail::ClientConnection* conn);
  void release(Pool& pool, detail::ClientConnection* conn);
  static void runSettle(SettleHook* hook);
  void settle();
  void armRequestTimer(const std::shared_ptr<detail::Exchange>& exchange);
  void sweepIdle();

  EventLoop* loop_;
  Options options_;
  std::shared_ptr<NameResolver> resolver_;
  std::shared_ptr<tls::Context> tlsContext_;
  std::unordered_map<std::string, std::unique_ptr<Pool>> pools_;
  std::vector<Pool*> settlingPools_;  // pools with connections settling this turn
  std::unique_ptr<SettleHook> settleHook_;
  TimerId sweepTimer_;
  Stats stats_;
  // Callbacks queued to run after request() returns, cancelled with the client.
  std::shared_ptr<bool> alive_;
};

}  // namespace libnet::http
