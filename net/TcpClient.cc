#include "net/TcpClient.h"

#include <cerrno>
#include <stdexcept>
#include <string>

#include "base/Logging.h"
#include "net/Connector.h"
#include "net/EventLoop.h"
#include "net/HappyEyeballs.h"
#include "net/Socket.h"
#include "net/TcpConnection.h"

namespace libnet {

namespace {

HappyEyeballs::Request byName(std::string_view hostPort, const TcpClient::Options& options) {
  HappyEyeballs::Request request = HappyEyeballs::Request::parse(hostPort, options.resolver);
  request.attemptDelay = options.attemptDelay;
  request.resolutionDelay = options.resolutionDelay;
  return request;
}

}  // namespace

TcpClient::TcpClient(EventLoop* loop, const SocketAddress& serverAddr, std::string name)
    : TcpClient(loop, serverAddr, std::move(name), Options{}) {}

// The connector checks the options (std::invalid_argument) before the
// client takes them.
TcpClient::TcpClient(EventLoop* loop, const SocketAddress& serverAddr, std::string name,
                     Options options)
    : TcpClient(loop, std::move(name), options,
                std::make_shared<Connector>(loop, serverAddr, options.initialRetryDelay,
                                            options.maxRetryDelay)) {}

TcpClient::TcpClient(EventLoop* loop, std::string_view hostPort, std::string name, Options options)
    : TcpClient(loop, std::move(name), options,
                std::make_shared<Connector>(loop, byName(hostPort, options),
                                            options.initialRetryDelay, options.maxRetryDelay)) {}

TcpClient::TcpClient(EventLoop* loop, std::string name, Options options,
                     std::shared_ptr<Connector> connector)
    : loop_(loop),
      options_(std::move(options)),
      connector_(std::move(connector)),
      name_(std::move(name)),
      connectionCallback_(defaultConnectionCallback),
      messageCallback_(defaultMessageCallback) {
  // The connector is owned by this client and stopped in its destructor, on
  // the same loop thread that runs this callback.
  connector_->setNewConnectionCallback([this](UniqueFd fd) { newConnection(std::move(fd)); });
}

TcpClient::~TcpClient() {
  loop_->assertInLoopThread();
  connector_->stop();  // in the loop thread: runs now, no callback after this
  TcpConnectionPtr conn;
  {
    MutexLock lock(mutex_);
    conn = std::move(connection_);
  }
  if (conn) {
    // The connection may outlive us (someone else holds it): its close
    // callback must no longer reach this object.
    conn->setCloseCallback(
        [](const TcpConnectionPtr& c) { c->loop()->queueInLoop([c] { c->connectDestroyed(); }); });
    conn->forceClose();
  }
}

void TcpClient::connect() {
  LOG_DEBUG << "TcpClient " << name_ << " connecting to " << connector_->target();
  connect_ = true;
  started_ = true;
  connector_->start();
}

void TcpClient::disconnect() {
  connect_ = false;
  if (TcpConnectionPtr conn = connection()) conn->shutdown();
}

void TcpClient::stop() {
  connect_ = false;
  connector_->stop();
}

void TcpClient::checkNotStarted(const char* what) const {
  if (started_) {
    throw std::logic_error("TcpClient " + name_ + ": " + what + "() after connect()");
  }
}

void TcpClient::enableRetry() {
  checkNotStarted("enableRetry");
  options_.retry = true;
}

void TcpClient::setTcpNoDelay(bool on) {
  checkNotStarted("setTcpNoDelay");
  options_.tcpNoDelay = on;
}

void TcpClient::setConnectionLayer(std::shared_ptr<const ConnectionLayer> layer) {
  checkNotStarted("setConnectionLayer");
  options_.layer = std::move(layer);
}

void TcpClient::setConnectionCallback(ConnectionCallback cb) {
  checkNotStarted("setConnectionCallback");
  connectionCallback_ = std::move(cb);
}

void TcpClient::setMessageCallback(MessageCallback cb) {
  checkNotStarted("setMessageCallback");
  messageCallback_ = std::move(cb);
}

void TcpClient::setWriteCompleteCallback(WriteCompleteCallback cb) {
  checkNotStarted("setWriteCompleteCallback");
  writeCompleteCallback_ = std::move(cb);
}

void TcpClient::setConnectErrorCallback(ConnectErrorCallback cb) {
  checkNotStarted("setConnectErrorCallback");
  // Held by the connector itself, which outlives any call it makes.
  connectErrorCallback_ = cb;
  connector_->setConnectErrorCallback(std::move(cb));
}

void TcpClient::setConnectFailureCallback(ConnectFailureCallback cb) {
  checkNotStarted("setConnectFailureCallback");
  connectFailureCallback_ = cb;
  connector_->setConnectFailureCallback(std::move(cb));
}

TcpConnectionPtr TcpClient::connection() const {
  MutexLock lock(mutex_);
  return connection_;
}

int TcpClient::connectAttempts() const { return connector_->attempts(); }

void TcpClient::newConnection(UniqueFd sockfd) {
  loop_->assertInLoopThread();
  const SocketAddress peerAddr = Socket::peerAddress(sockfd.get());
  const SocketAddress localAddr = Socket::localAddress(sockfd.get());
  std::string connName = name_ + ":" + peerAddr.toIpPort() + "#" + std::to_string(nextConnId_++);
  TcpConnectionPtr conn =
      TcpConnection::create(loop_, std::move(connName), std::move(sockfd), localAddr, peerAddr,
                            SocketAddress(), options_.layer.get());
  if (options_.tcpNoDelay) conn->setTcpNoDelay(true);
  conn->setConnectionCallback(connectionCallback_);
  conn->setMessageCallback(messageCallback_);
  conn->setWriteCompleteCallback(writeCompleteCallback_);
  // Runs on this loop's thread, where the client is destroyed; the destructor
  // replaces this callback before the client goes away.
  conn->setCloseCallback([this](const TcpConnectionPtr& c) { removeConnection(c); });
  {
    MutexLock lock(mutex_);
    connection_ = conn;
  }
  conn->connectEstablished();
}

void TcpClient::removeConnection(const TcpConnectionPtr& conn) {
  loop_->assertInLoopThread();
  {
    MutexLock lock(mutex_);
    if (connection_ == conn) connection_.reset();
  }
  loop_->queueInLoop([conn] { conn->connectDestroyed(); });
  if (!conn->announced()) reportLayerFailure(*conn);
  if (options_.retry && connect_) {
    LOG_INFO << "TcpClient " << name_ << " reconnecting to " << connector_->target();
    connector_->restart();
  }
}

// Closed before it was announced: the layer's handshake failed (it logged
// why), a failed connect for the application, which learns why too.
void TcpClient::reportLayerFailure(const TcpConnection& conn) {
  if (connectFailureCallback_) {
    const std::string_view reason = conn.layerFailure();
    connectFailureCallback_(connector_->layerFailure(
        reason.empty() ? "closed during the connection layer's handshake" : std::string(reason)));
  }
  if (connectErrorCallback_) connectErrorCallback_(EPROTO);
}

}  // namespace libnet
