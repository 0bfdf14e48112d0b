#include "net/http/HttpClient.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/dns/Resolver.h"
#include "net/http/ClientConnection.h"
#include "net/http/ClientExchange.h"
#include "net/http/HttpChars.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"

namespace libnet::http {

using detail::ClientConnection;
using detail::Exchange;
using detail::PreparedRequest;
using Kind = ClientError::Kind;

struct HttpClient::Pool {
  std::vector<std::shared_ptr<ClientConnection>> connections;  // open or opening
  std::vector<ClientConnection*> idle;                         // most recent last
  // Done with a response in this loop turn; idle once the turn's events
  // have been handled (settle()).
  std::vector<ClientConnection*> settling;
  bool listedForSettle = false;  // in HttpClient::settlingPools_
  std::deque<std::shared_ptr<Exchange>> waiting;
  std::shared_ptr<const ConnectionLayer> layer;
};

// What the end-of-turn functor of settle() holds: a plain pointer, which
// std::function keeps inline, so that a keep-alive request costs no
// allocation for it. A client destroyed while the functor is queued hands
// its hook over to the functor, which frees it when it runs (the loop runs
// every queued functor, at the latest when it is destroyed).
struct HttpClient::SettleHook {
  HttpClient* client = nullptr;
  bool queued = false;
};

bool RequestHandle::pending() const {
  const std::shared_ptr<Exchange> exchange = exchange_.lock();
  return exchange && !exchange->done;
}

std::optional<std::string_view> Response::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (detail::equalsIgnoreCase(n, name)) return std::string_view(v);
  }
  return std::nullopt;
}

HttpClient::HttpClient(EventLoop* loop, Options options)
    : loop_(loop),
      options_(std::move(options)),
      resolver_(options_.resolver),
      settleHook_(std::make_unique<SettleHook>()),
      alive_(std::make_shared<bool>(true)) {
  settleHook_->client = this;
  loop_->assertInLoopThread();
  if (options_.maxConnectionsPerOrigin == 0) {
    throw std::invalid_argument("HttpClient: maxConnectionsPerOrigin must be at least 1");
  }
  if (!resolver_) resolver_ = std::make_shared<dns::Resolver>(loop_);
}

HttpClient::~HttpClient() {
  loop_->assertInLoopThread();
  if (sweepTimer_.valid()) loop_->cancel(sweepTimer_);
  if (settleHook_->queued) {
    settleHook_->client = nullptr;
    (void)settleHook_.release();  // runSettle() deletes it
  }
  for (auto& [key, pool] : pools_) {
    for (const std::shared_ptr<Exchange>& exchange : pool->waiting) {
      if (exchange->requestTimer.valid()) loop_->cancel(exchange->requestTimer);
      exchange->done = true;
    }
    for (const std::shared_ptr<ClientConnection>& conn : pool->connections) conn->abort();
  }
}

RequestHandle HttpClient::request(Request request, ResponseCallback callback) {
  ClientError error;
  PreparedRequestPtr prepared = prepare(std::move(request), &error);
  if (prepared) return this->request(std::move(prepared), std::move(callback));
  // Never inside request(): the caller may not expect its callback yet.
  loop_->assertInLoopThread();
  auto exchange = std::make_shared<Exchange>();
  exchange->done = true;
  ++stats_.errors;
  loop_->queueInLoop(
      [alive = std::weak_ptr<bool>(alive_), cb = std::move(callback), e = std::move(error)] {
        if (alive.lock()) cb(FetchResult(e));
      });
  return RequestHandle(exchange);
}

PreparedRequestPtr HttpClient::prepare(Request request, ClientError* error) const {
  std::shared_ptr<PreparedRequest> prepared;
  if (std::optional<ClientError> e =
          PreparedRequest::prepare(std::move(request), options_.userAgent, &prepared)) {
    *error = std::move(*e);
    return nullptr;
  }
  return prepared;
}

RequestHandle HttpClient::request(PreparedRequestPtr request, ResponseCallback callback) {
  loop_->assertInLoopThread();
  auto exchange = std::make_shared<Exchange>();
  exchange->callback = std::move(callback);
  if (!request) {
    failLater(exchange, ClientError{Kind::kBadRequest, "no request (prepare() failed?)"});
    return RequestHandle(exchange);
  }
  exchange->redirectsLeft = request->request.options.maxRedirects;
  exchange->request = std::move(request);
  armRequestTimer(exchange);
  start(exchange);
  return RequestHandle(exchange);
}

void HttpClient::armRequestTimer(const std::shared_ptr<Exchange>& exchange) {
  const Duration timeout = exchange->request->request.options.requestTimeout;
  if (timeout <= Duration::zero()) return;
  std::weak_ptr<Exchange> weak = exchange;
  // The exchange may outlive the client (a queued error holds it): the
  // timer checks that the client is still there before it reaches it.
  exchange->requestTimer =
      loop_->runAfter(timeout, [this, alive = std::weak_ptr<bool>(alive_), weak] {
        std::shared_ptr<Exchange> e = weak.lock();
        if (!alive.lock() || !e || e->done) return;
        e->requestTimer = TimerId();
        cancel(RequestHandle(e));
        finish(e, ClientError{Kind::kRequestTimeout,
                              "request to " + e->request->request.url + " timed out"});
      });
}

HttpClient::Pool& HttpClient::poolFor(const PreparedRequest& request) {
  std::unique_ptr<Pool>& pool = pools_[request.originKey];
  if (!pool) pool = std::make_unique<Pool>();
  return *pool;
}

void HttpClient::start(std::shared_ptr<Exchange> exchange) {
  Pool& pool = poolFor(*exchange->request);
  if (pool.waiting.size() >= options_.maxQueuedPerOrigin) {
    ClientError error{Kind::kQueueFull,
                      "too many requests waiting for " + exchange->request->originKey};
    failLater(std::move(exchange), std::move(error));
    return;
  }
  if (exchange->freshOnly) {
    pool.waiting.push_front(std::move(exchange));
  } else {
    pool.waiting.push_back(std::move(exchange));
  }
  dispatch(pool);
}

// Hands waiting requests to idle connections (most recently used first: the
// least likely to have been closed by the server), then to new ones while
// the origin has room; the rest wait for a connection to free up. While a
// connection of the origin settles, requests wait for the end of the loop
// turn rather than open a connection that one of them may not need.
void HttpClient::dispatch(Pool& pool) {
  while (!pool.waiting.empty()) {
    std::shared_ptr<Exchange>& next = pool.waiting.front();
    if (!next->freshOnly) {
      if (ClientConnection* conn = takeIdle(pool)) {
        std::shared_ptr<Exchange> exchange = std::move(next);
        pool.waiting.pop_front();
        conn->send(std::move(exchange));
        continue;
      }
      if (!pool.settling.empty()) return;
    }
    if (pool.connections.size() >= options_.maxConnectionsPerOrigin) {
      // A retry needs a new connection: make room by closing an idle one.
      if (next->freshOnly && !pool.idle.empty()) {
        retire(pool, pool.idle.back());
        continue;
      }
      return;
    }
    std::shared_ptr<Exchange> exchange = std::move(next);
    pool.waiting.pop_front();
    openConnection(pool, std::move(exchange));
  }
}

// The most recently used idle connection still fit to carry a request, or
// null. One the server has closed or spoken on, though the loop has not
// seen it yet (ClientConnection::reusable()), is retired: a request sent on
// it would be lost, and a POST could not be sent again.
ClientConnection* HttpClient::takeIdle(Pool& pool) {
  while (!pool.idle.empty()) {
    ClientConnection* conn = pool.idle.back();
    pool.idle.pop_back();
    if (conn->reusable()) return conn;
    retire(pool, conn);
  }
  return nullptr;
}

std::shared_ptr<const ConnectionLayer> HttpClient::layerFor(const PreparedRequest& request) {
  if (!request.url->secure()) return nullptr;
  if (!tlsContext_) {
    tls::Context::ClientOptions tlsOptions;
    tlsOptions.caFile = options_.caFile;
    tlsOptions.verifyPeer = options_.verifyPeer;
    tlsOptions.alpn = {"http/1.1"};
    tlsContext_ = tls::Context::newClient(tlsOptions);
  }
  return tls::newLayer(tlsContext_, request.url->host());
}

void HttpClient::openConnection(Pool& pool, std::shared_ptr<Exchange> exchange) {
  std::shared_ptr<ClientConnection> conn;
  try {
    if (!pool.layer) pool.layer = layerFor(*exchange->request);
    conn = std::make_shared<ClientConnection>(this, *exchange->request, pool.layer, resolver_);
  } catch (const std::exception& e) {
    // A CA file OpenSSL cannot load, a host TcpClient refuses.
    const Kind kind = exchange->request->url->secure() ? Kind::kTls : Kind::kBadRequest;
    ClientError error{kind, e.what()};
    failLater(std::move(exchange), std::move(error));
    return;
  }
  pool.connections.push_back(conn);
  conn->start(std::move(exchange));
}

void HttpClient::onResponse(ClientConnection* conn, std::shared_ptr<Exchange> exchange,
                            Response response, bool reusable) {
  Pool& pool = *pools_[conn->originKey()];
  if (reusable) {
    release(pool, conn);
  } else {
    retire(pool, conn);
  }
  if (exchange->done) {
    dispatch(pool);
    return;
  }
  ++stats_.responses;
  if (redirect(exchange, response)) {
    dispatch(pool);
    return;
  }
  // Only after a redirect: a copy of the URL per response would be the one
  // allocation of a keep-alive request that nobody asked for.
  if (exchange->redirectsLeft != exchange->request->request.options.maxRedirects) {
    response.url = exchange->request->request.url;
  }
  finish(exchange, FetchResult(std::move(response)));
  dispatch(pool);
}

void HttpClient::onFailure(ClientConnection* conn, std::shared_ptr<Exchange> exchange,
                           ClientError error, bool retryable) {
  Pool& pool = *pools_[conn->originKey()];
  retire(pool, conn);
  if (exchange && !exchange->done) {
    const PreparedRequest& request = *exchange->request;
    if (retryable && request.idempotent && !exchange->retried) {
      ++stats_.retries;
      exchange->retried = true;
      exchange->freshOnly = true;
      start(std::move(exchange));
      return;
    }
    if (retryable) {
      error.message += exchange->retried
                           ? "; not retried: already retried once"
                           : "; not retried: " + std::string(methodName(request.request.method)) +
                                 " is not idempotent";
    }
    finish(exchange, std::move(error));
  }
  dispatch(pool);
}

void HttpClient::onIdleClosed(ClientConnection* conn) {
  Pool& pool = *pools_[conn->originKey()];
  retire(pool, conn);
  dispatch(pool);
}

// A connection done with its response joins the pool at the end of this
// loop turn, not now: the event that brought the response may bring more
// right after this callback returns (the server's FIN read next, a TLS
// close_notify that came with the response, an io_uring completion of the
// same batch), and a request handed over in between would go down with the
// connection. A request that the response's callback makes waits for the
// same moment (dispatch()).
void HttpClient::release(Pool& pool, ClientConnection* conn) {
  pool.settling.push_back(conn);
  if (!pool.listedForSettle) {
    pool.listedForSettle = true;
    settlingPools_.push_back(&pool);
  }
  if (!settleHook_->queued) {
    settleHook_->queued = true;
    loop_->queueInLoop([hook = settleHook_.get()] { runSettle(hook); });
  }
  if (!sweepTimer_.valid() && options_.idleTimeout > Duration::zero()) {
    const Duration period =
        std::max<Duration>(options_.idleTimeout / 4, std::chrono::milliseconds(10));
    sweepTimer_ = loop_->runEvery(period, [this] { sweepIdle(); });
  }
}

void HttpClient::runSettle(SettleHook* hook) {
  hook->queued = false;
  if (hook->client == nullptr) {
    delete hook;  // handed over by ~HttpClient()
    return;
  }
  hook->client->settle();
}

// The end of the turn in which connections finished a response: those still
// idle (the others were retired by what the turn brought) join the pool, and
// the requests that waited for them go.
void HttpClient::settle() {
  while (!settlingPools_.empty()) {
    Pool& pool = *settlingPools_.back();
    settlingPools_.pop_back();
    pool.listedForSettle = false;
    pool.idle.insert(pool.idle.end(), pool.settling.begin(), pool.settling.end());
    pool.settling.clear();
    dispatch(pool);
  }
}

// Closes pooled connections idle for longer than Options::idleTimeout: one
// periodic timer for the whole client rather than one per connection and
// request.
void HttpClient::sweepIdle() {
  const MonoTime now = MonoClock::now();
  for (auto& [key, pool] : pools_) {
    std::vector<ClientConnection*> expired;
    for (ClientConnection* conn : pool->idle) {
      if (now - conn->idleSince() >= options_.idleTimeout) expired.push_back(conn);
    }
    for (ClientConnection* conn : expired) retire(*pool, conn);
  }
}

// Takes the connection out of the pool, closed; its destruction is queued,
// because this may run inside one of its own callbacks.
void HttpClient::retire(Pool& pool, ClientConnection* conn) {
  conn->abort();
  std::erase(pool.idle, conn);
  std::erase(pool.settling, conn);
  auto it = std::find_if(pool.connections.begin(), pool.connections.end(),
                         [conn](const auto& c) { return c.get() == conn; });
  if (it == pool.connections.end()) return;
  std::shared_ptr<ClientConnection> owned = std::move(*it);
  *it = std::move(pool.connections.back());
  pool.connections.pop_back();
  loop_->queueInLoop([owned = std::move(owned)] {});
}

void HttpClient::cancel(const RequestHandle& handle) {
  loop_->assertInLoopThread();
  std::shared_ptr<Exchange> exchange = handle.exchange_.lock();
  if (!exchange || exchange->done) return;
  exchange->done = true;
  if (exchange->requestTimer.valid()) loop_->cancel(exchange->requestTimer);
  exchange->requestTimer = TimerId();
  Pool& pool = poolFor(*exchange->request);
  if (ClientConnection* conn = exchange->connection) {
    retire(pool, conn);
    dispatch(pool);
    return;
  }
  std::erase(pool.waiting, exchange);
}

// For errors found while request() may still be on the stack: the callback
// runs from the loop's queue instead.
void HttpClient::failLater(std::shared_ptr<Exchange> exchange, ClientError error) {
  loop_->queueInLoop([this, alive = std::weak_ptr<bool>(alive_), exchange = std::move(exchange),
                      error = std::move(error)]() mutable {
    if (alive.lock() && !exchange->done) finish(exchange, std::move(error));
  });
}

void HttpClient::finish(const std::shared_ptr<Exchange>& exchange, FetchResult result) {
  const bool wasDone = exchange->done;
  exchange->done = true;
  if (exchange->requestTimer.valid()) loop_->cancel(exchange->requestTimer);
  exchange->requestTimer = TimerId();
  if (!result.ok()) ++stats_.errors;
  // A request timeout cancels first (done), then reports.
  if (wasDone && result.ok()) return;
  ResponseCallback callback = std::move(exchange->callback);
  // The request is over whatever the callback does: an exception from it
  // (anything, an int too) is logged and the client goes on with the
  // origin's queue, as every other callback of the library does.
  if (callback) {
    callGuarded("HTTP client response callback", [&] { callback(std::move(result)); });
  }
}

namespace {

bool isRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// What a request followed to `next` keeps: 303 asks for a GET without the
// body (RFC 9110 15.4.4); credentials do not go to another origin.
Request redirected(const Request& original, const Url& from, const Url& next, int status) {
  Request r = original;
  r.url = next.toString();
  auto drop = [&r](std::string_view name) {
    std::erase_if(r.headers,
                  [name](const auto& h) { return detail::equalsIgnoreCase(h.first, name); });
  };
  if (status == 303 && r.method != Method::kHead) {
    r.method = Method::kGet;
    r.body.clear();
    r.bodyFile.clear();
    r.bodyFd = -1;
    r.bodyLength = 0;
    drop("content-length");
    drop("content-type");
  }
  if (next.origin() != from.origin()) {
    drop("authorization");
    drop("cookie");
    drop("proxy-authorization");
    drop("host");
  }
  return r;
}

}  // namespace

// Follows a redirect by sending the exchange again, to its new URL; false
// when `response` is the answer to report.
bool HttpClient::redirect(const std::shared_ptr<Exchange>& exchange, const Response& response) {
  const Request& original = exchange->request->request;
  if (!original.options.followRedirects || !isRedirect(response.status)) return false;
  const std::optional<std::string_view> location = response.header("location");
  if (!location) return false;
  if (exchange->redirectsLeft <= 0) {
    finish(exchange,
           ClientError{Kind::kTooManyRedirects, "too many redirects (more than " +
                                                    std::to_string(original.options.maxRedirects) +
                                                    "), last to " + std::string(*location)});
    return true;
  }
  std::string why;
  const std::optional<Url> next = exchange->request->url->resolve(*location, &why);
  if (!next || next->scheme() == Url::Scheme::kWs || next->scheme() == Url::Scheme::kWss) {
    finish(exchange, ClientError{Kind::kMalformed,
                                 "unusable Location " + std::string(*location) + ": " + why});
    return true;
  }
  std::shared_ptr<PreparedRequest> prepared;
  std::optional<ClientError> error = PreparedRequest::prepare(
      redirected(original, *exchange->request->url, *next, response.status), options_.userAgent,
      &prepared);
  if (error) {
    finish(exchange, std::move(*error));
    return true;
  }
  exchange->request = std::move(prepared);
  --exchange->redirectsLeft;
  exchange->retried = false;
  exchange->freshOnly = false;
  exchange->bodyHanded = false;
  start(exchange);
  return true;
}

void HttpClient::pauseResponse(const RequestHandle& handle) {
  const std::shared_ptr<Exchange> exchange = handle.exchange_.lock();
  if (exchange && !exchange->done && exchange->connection) exchange->connection->pauseReading();
}

void HttpClient::resumeResponse(const RequestHandle& handle) {
  const std::shared_ptr<Exchange> exchange = handle.exchange_.lock();
  if (exchange && !exchange->done && exchange->connection) exchange->connection->resumeReading();
}

size_t HttpClient::connectionCount() const {
  size_t n = 0;
  for (const auto& [key, pool] : pools_) n += pool->connections.size();
  return n;
}

size_t HttpClient::idleConnectionCount() const {
  size_t n = 0;
  for (const auto& [key, pool] : pools_) n += pool->idle.size() + pool->settling.size();
  return n;
}

}  // namespace libnet::http
