#include "net/TcpServer.h"

#include <cassert>
#include <stdexcept>

#include "base/Logging.h"
#include "net/Acceptor.h"
#include "net/EventLoop.h"
#include "net/EventLoopThreadPool.h"
#include "net/Socket.h"
#include "net/TcpConnection.h"

namespace libnet {

TcpServer::TcpServer(EventLoop* loop, const InetAddress& listenAddr, std::string name,
                     Option option)
    : loop_(loop),
      name_(std::move(name)),
      acceptor_(std::make_unique<Acceptor>(loop, listenAddr, option == Option::kReusePort)),
      threadPool_(std::make_unique<EventLoopThreadPool>(loop, name_)),
      connectionCallback_(defaultConnectionCallback),
      messageCallback_(defaultMessageCallback) {
  acceptor_->setNewConnectionCallback(
      [this](UniqueFd fd, const std::optional<InetAddress>& peer) {
        newConnection(std::move(fd), peer);
      });
}

TcpServer::~TcpServer() {
  loop_->assertInLoopThread();
  alive_.reset();
  for (auto& [raw, conn] : connections_) {
    conn->getLoop()->runInLoop([conn] { conn->connectDestroyed(); });
  }
  connections_.clear();
  // A wheel's last users are the connectDestroyed calls of its loop, queued
  // above or earlier by removeConnection, all from this thread; functors
  // queued from one thread run in order, so the wheel dies on its own loop
  // after them (and its timer is cancelled there, where that is immediate).
  // Handed over as a raw pointer: should a loop be torn down without running
  // it, the wheel leaks instead of cancelling a timer on a dead TimerQueue.
  for (auto& [ioLoop, wheel] : idleWheels_) {
    ioLoop->queueInLoop([wheel = wheel.release()] {
      // Every connection has left it by now (connectDestroyed removes it):
      // an entry left over would be one that a closed connection leaked.
      assert(wheel->size() == 0);
      delete wheel;
    });
  }
  idleWheels_.clear();
  // threadPool_ is destroyed next: each I/O loop runs what was queued to it
  // (the connectDestroyed calls and wheel deletions above) before its thread
  // exits.
}

InetAddress TcpServer::listenAddress() const { return acceptor_->localAddress(); }

void TcpServer::setThreadNum(int numThreads) { threadPool_->setThreadNum(numThreads); }

void TcpServer::setIdleTimeout(Duration timeout, Duration tick) {
  if (timeout < Duration::zero()) {
    throw std::invalid_argument("TcpServer::setIdleTimeout: negative timeout");
  }
  // A bad tick fails here, with the reason, rather than in start().
  if (timeout > Duration::zero()) (void)TimingWheel::tickFor(timeout, tick);
  if (started_) {
    LOG_WARN << "TcpServer " << name_ << ": setIdleTimeout() after start() is ignored";
    return;
  }
  idleTimeout_ = timeout;
  idleTick_ = tick;
}

void TcpServer::start() {
  loop_->assertInLoopThread();
  if (started_) return;
  if (tcpNoDelay_) {
    acceptor_->setTcpNoDelay(true);
    noDelayInherited_ = true;
  }
  // Bound to one address, every accepted socket's local address is that one;
  // bound to a wildcard, a connection looks its own up when asked. Either
  // way, no getsockname() per connection.
  listenAddr_ = acceptor_->localAddress();
  acceptor_->listen();
  threadPool_->start(threadInitCallback_);
  if (idleTimeout_ > Duration::zero()) {
    for (EventLoop* ioLoop : threadPool_->getAllLoops()) {
      // Built here, used only on ioLoop: a connection learns of it through
      // newConnection(), whose hand-over to ioLoop orders the two.
      idleWheels_.emplace(
          ioLoop, std::make_unique<TimingWheel>(ioLoop, idleTimeout_, idleTick_, idleCallback_));
    }
  }
  started_ = true;
  LOG_DEBUG << "TcpServer " << name_ << " listening on " << listenAddress().toIpPort();
}

size_t TcpServer::connectionCount() const {
  loop_->assertInLoopThread();
  return connections_.size();
}

void TcpServer::newConnection(UniqueFd sockfd, const std::optional<InetAddress>& peerAddr) {
  loop_->assertInLoopThread();
  EventLoop* ioLoop = threadPool_->getNextLoop();
  std::optional<InetAddress> localAddr;
  if (!listenAddr_.isWildcard()) localAddr = listenAddr_;
  std::string connName = name_ + "#" + std::to_string(nextConnId_++);
  auto conn = std::make_shared<TcpConnection>(ioLoop, std::move(connName), std::move(sockfd),
                                              localAddr, peerAddr, listenAddr_);
  if (tcpNoDelay_ && !noDelayInherited_) conn->setTcpNoDelay(true);
  if (maxQueuedOutput_) conn->setMaxQueuedOutput(*maxQueuedOutput_);
  if (!idleWheels_.empty()) conn->setIdleWheel(idleWheels_.at(ioLoop).get());
  conn->setConnectionCallback(connectionCallback_);
  conn->setMessageCallback(messageCallback_);
  conn->setWriteCompleteCallback(writeCompleteCallback_);
  conn->setCloseCallback(
      [this, loop = loop_, alive = std::weak_ptr<int>(alive_)](const TcpConnectionPtr& c) {
        // On c's loop thread. On the server's own, it is the thread that
        // destroys the server: no hop needed.
        if (loop->isInLoopThread()) {
          if (!alive.expired()) removeConnection(c);
          return;
        }
        // Elsewhere, touch nothing of the server here: hop to the server's
        // loop (which outlives it); see alive_.
        loop->queueInLoop([this, alive, c] {
          if (alive.expired()) return;
          removeConnection(c);
        });
      });
  connections_.emplace(conn.get(), conn);
  if (ioLoop == loop_) {
    conn->connectEstablished();
  } else {
    ioLoop->queueInLoop([conn] { conn->connectEstablished(); });
  }
}

void TcpServer::removeConnection(const TcpConnectionPtr& conn) {
  loop_->assertInLoopThread();
  if (connections_.erase(conn.get()) == 0) return;
  // Queued, not run: we may be inside conn's own event handler right now.
  conn->getLoop()->queueInLoop([conn] { conn->connectDestroyed(); });
}

}  // namespace libnet
