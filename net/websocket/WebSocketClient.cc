#include "net/websocket/WebSocketClient.h"

#include <optional>
#include <string>
#include <utility>

#include "base/Guarded.h"
#include "net/Buffer.h"
#include "net/ConnectFailure.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/dns/Resolver.h"
#include "net/http/HttpResponseParser.h"
#include "net/websocket/ClientHandshake.h"
#include "net/websocket/Handshake.h"

namespace libnet::ws {

namespace {

// One connect: the TcpClient, the deadline, the handshake. It owns itself
// (self_) until it ends: handed to the WebSocket on success (which keeps the
// TcpClient alive with its connection), released from the loop's queue on
// failure (a TcpClient is not destroyed inside its own callbacks).
class Connecting : public std::enable_shared_from_this<Connecting> {
 public:
  Connecting(EventLoop* loop, http::Url url, ClientOptions options, Handlers handlers,
             ErrorCallback onError)
      : loop_(loop),
        url_(std::move(url)),
        options_(std::move(options)),
        handlers_(std::move(handlers)),
        onError_(std::move(onError)) {}

  void start();

 private:
  void onConnection(const TcpConnectionPtr& conn);
  void onResponse(const TcpConnectionPtr& conn, Buffer* buf);
  void fail(const std::string& reason);
  void armTimer(Duration timeout, const char* what);
  void cancelTimer();

  EventLoop* loop_;
  const http::Url url_;
  const ClientOptions options_;
  Handlers handlers_;
  ErrorCallback onError_;
  std::shared_ptr<NameResolver> resolver_;
  std::unique_ptr<TcpClient> client_;
  std::shared_ptr<Connecting> self_;
  std::string key_;
  http::HttpResponseParser response_;
  std::string lookupError_;
  std::string tlsError_;  // why the TLS handshake failed, if it did
  TimerId timer_;
  bool done_ = false;
};

void Connecting::start() {
  resolver_ = options_.resolver;
  if (!resolver_ && !InetAddress::parse(url_.host(), url_.port())) {
    resolver_ = std::make_shared<dns::Resolver>(loop_);
  }
  TcpClient::Options tcp{.tcpNoDelay = true,
                         .layer = detail::clientLayer(url_, options_.caFile, options_.verifyPeer),
                         .resolver = resolver_};
  client_ = std::make_unique<TcpClient>(loop_, url_.hostPort(), "ws-client", std::move(tcp));
  const std::weak_ptr<Connecting> weak = weak_from_this();
  client_->setConnectionCallback([weak](const TcpConnectionPtr& conn) {
    if (auto self = weak.lock()) self->onConnection(conn);
  });
  client_->setMessageCallback([weak](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
    if (auto self = weak.lock()) self->onResponse(conn, buf);
  });
  client_->setConnectFailureCallback([weak](const ConnectFailure& failure) {
    auto self = weak.lock();
    if (!self) return;
    if (failure.layer.empty()) {
      self->lookupError_ = failure.message();
    } else {
      self->tlsError_ = failure.layer;
    }
  });
  client_->setConnectErrorCallback([weak](int error) {
    auto self = weak.lock();
    if (!self) return;
    self->client_->stop();
    self->fail(self->lookupError_.empty() ? detail::connectError(self->url_, error, self->tlsError_)
                                          : "connect to " + self->lookupError_);
  });
  armTimer(options_.connectTimeout, "connect");
  self_ = shared_from_this();
  client_->connect();
}

void Connecting::armTimer(Duration timeout, const char* what) {
  cancelTimer();
  timer_ = loop_->runAfter(timeout, [weak = weak_from_this(), what] {
    if (auto self = weak.lock()) {
      self->timer_ = TimerId();
      self->fail(std::string(what) + " to " + self->url_.toString() + " timed out");
    }
  });
}

void Connecting::cancelTimer() {
  if (timer_.valid()) loop_->cancel(std::exchange(timer_, TimerId()));
}

void Connecting::onConnection(const TcpConnectionPtr& conn) {
  if (!conn->connected()) {
    fail("the connection to " + url_.hostPort() + " closed during the handshake");
    return;
  }
  if (done_) return;
  conn->setMaxQueuedOutput(options_.maxQueuedOutput);
  armTimer(options_.handshakeTimeout, "the WebSocket handshake");
  key_ = newClientKey();
  response_.start(/*headRequest=*/false);
  conn->send(detail::upgradeRequest(url_, key_, options_.ws.deflate));
}

void Connecting::onResponse(const TcpConnectionPtr& conn, Buffer* buf) {
  if (done_) {
    buf->retrieveAll();
    return;
  }
  const http::HttpResponseParser::Result result = response_.parse(buf);
  if (result == http::HttpResponseParser::Result::kNeedMore) return;
  if (result == http::HttpResponseParser::Result::kError) {
    fail("bad answer to the upgrade request: " + std::string(response_.errorMessage()));
    return;
  }
  std::optional<DeflateParams> params;
  const std::string problem =
      detail::checkUpgradeResponse(response_, key_, options_.ws.deflate, &params);
  if (!problem.empty()) {
    fail(url_.toString() + ": " + problem);
    return;
  }
  done_ = true;
  cancelTimer();
  const WebSocketPtr ws =
      WebSocket::create(conn, Role::kClient, options_.ws, std::move(params), std::move(handlers_));
  ws->holdOwner(std::move(self_));
  ws->start(buf);  // whatever the server sent right behind its 101
}

void Connecting::fail(const std::string& reason) {
  if (done_) return;
  done_ = true;
  cancelTimer();
  client_->stop();
  if (const TcpConnectionPtr conn = client_->connection()) conn->forceClose();
  if (onError_) callGuarded("WebSocket connect error callback", [&] { onError_(reason); });
  loop_->queueInLoop([self = std::move(self_)] {});
}

}  // namespace

void connect(EventLoop* loop, std::string_view url, const ClientOptions& options, Handlers handlers,
             ErrorCallback onError) {
  check(options.ws);
  loop->assertInLoopThread();
  auto connecting = std::make_shared<Connecting>(loop, detail::parseWebSocketUrl(url), options,
                                                 std::move(handlers), std::move(onError));
  connecting->start();
}

}  // namespace libnet::ws
