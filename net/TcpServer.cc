#include "net/TcpServer.h"

#include <cassert>
#include <stdexcept>
#include <unordered_map>

#include "base/Logging.h"
#include "net/Acceptor.h"
#include "net/EventLoop.h"
#include "net/EventLoopThreadPool.h"
#include "net/TcpConnection.h"

namespace libnet {

namespace {

// An idle connection, when the application set no idle callback.
void closeIdle(const TcpConnectionPtr& conn) {
  LOG_DEBUG << conn->name() << " is idle, closing it";
  conn->forceClose();
}

}  // namespace

struct TcpServer::LoopState {
  explicit LoopState(EventLoop* l) : loop(l) {}
  EventLoop* const loop;
  std::unordered_map<TcpConnection*, TcpConnectionPtr> connections;
  std::atomic<size_t> count{0};            // connections.size(), for other threads
  std::unique_ptr<TimingWheel> idleWheel;  // while the idle timeout is on
  std::unique_ptr<Acceptor> acceptor;      // kPerLoop with I/O threads
  bool serverAlive = true;                 // until tearDown()
};

TcpServer::TcpServer(EventLoop* loop, const InetAddress& listenAddr, std::string name,
                     Option option)
    : loop_(loop),
      name_(std::move(name)),
      acceptor_(std::make_unique<Acceptor>(loop, listenAddr, option == Option::kReusePort)),
      threadPool_(std::make_unique<EventLoopThreadPool>(loop, name_)),
      connectionCallback_(defaultConnectionCallback),
      messageCallback_(defaultMessageCallback),
      listenAddr_(acceptor_->localAddress()) {}

TcpServer::~TcpServer() {
  loop_->assertInLoopThread();
  // Each loop destroys its own connections, acceptor and wheel, from its
  // queue: after whatever was queued to it before (a hand-over queued from
  // this thread lands first, so its connection is in the map by then; and so
  // does the destruction of a connection removed earlier, still queued).
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    state->loop->queueInLoop([state] { tearDown(state.get()); });
  }
  loopStates_.clear();
  // The I/O loops run what was queued to them before their threads exit,
  // when threadPool_ is destroyed next.
}

void TcpServer::tearDown(LoopState* state) {
  state->serverAlive = false;
  state->acceptor.reset();
  for (auto& [raw, conn] : state->connections) conn->connectDestroyed();
  state->connections.clear();
  state->count.store(0, std::memory_order_relaxed);
  if (!state->idleWheel) return;
  // The wheel goes after the last connection that may be in it: one removed
  // just before this ran has its connectDestroyed still queued, and nothing
  // queues another now that serverAlive is false. Handed over as a raw
  // pointer: should the loop be torn down without running it, the wheel
  // leaks instead of cancelling a timer on a dead TimerQueue.
  state->loop->queueInLoop([wheel = state->idleWheel.release()] {
    // An entry left over would be one that a closed connection leaked.
    assert(wheel->size() == 0);
    delete wheel;
  });
}

InetAddress TcpServer::listenAddress() const { return listenAddr_; }

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
  threadPool_->start(threadInitCallback_);
  const bool perLoop =
      acceptMode_ == AcceptMode::kPerLoop && threadPool_->getAllLoops().front() != loop_;
  const TimingWheel::ExpireCallback onIdle =
      idleCallback_ ? idleCallback_ : TimingWheel::ExpireCallback(closeIdle);
  for (EventLoop* ioLoop : threadPool_->getAllLoops()) {
    auto state = std::make_shared<LoopState>(ioLoop);
    // Built here, used only on ioLoop from now on: the connections learn of
    // it through newConnection(), and the queue that carries a connection
    // (or the per-loop acceptor's start) to ioLoop orders the two.
    if (idleTimeout_ > Duration::zero()) {
      state->idleWheel = std::make_unique<TimingWheel>(ioLoop, idleTimeout_, idleTick_, onIdle);
    }
    loopStates_.push_back(std::move(state));
  }
  if (perLoop) {
    startPerLoopAcceptors();
  } else {
    if (tcpNoDelay_) {
      acceptor_->setTcpNoDelay(true);
      noDelayInherited_ = true;
    }
    if (deferAcceptSeconds_ > 0) acceptor_->setDeferAccept(deferAcceptSeconds_);
    acceptor_->setNewConnectionCallback(
        [this](UniqueFd fd, const std::optional<InetAddress>& peer) {
          LoopState* state = loopStates_[nextLoop_++ % loopStates_.size()].get();
          newConnection(state, std::move(fd), peer);
        });
    acceptor_->listen();
  }
  started_ = true;
  LOG_DEBUG << "TcpServer " << name_ << " listening on " << listenAddr_.toIpPort()
            << (perLoop ? " (a socket per loop)" : "");
}

void TcpServer::startPerLoopAcceptors() {
  // The constructor's socket was bound without SO_REUSEPORT (unless asked):
  // give its port to one socket per loop that all have it. Between the two,
  // another process could take the port: the bind below then throws.
  acceptor_.reset();
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    auto acceptor = std::make_unique<Acceptor>(state->loop, listenAddr_, /*reusePort=*/true);
    if (tcpNoDelay_) acceptor->setTcpNoDelay(true);
    if (deferAcceptSeconds_ > 0) acceptor->setDeferAccept(deferAcceptSeconds_);
    acceptor->setNewConnectionCallback(
        [this, s = state.get()](UniqueFd fd, const std::optional<InetAddress>& peer) {
          newConnection(s, std::move(fd), peer);
        });
    state->acceptor = std::move(acceptor);
  }
  noDelayInherited_ = tcpNoDelay_;
  // Listening only once all are bound, so that a failure leaves none half
  // started; each starts taking connections on its own loop.
  for (const std::shared_ptr<LoopState>& state : loopStates_) state->acceptor->listen();
}

size_t TcpServer::connectionCount() const {
  size_t total = 0;
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    total += state->count.load(std::memory_order_relaxed);
  }
  return total;
}

void TcpServer::newConnection(LoopState* state, UniqueFd sockfd,
                              const std::optional<InetAddress>& peerAddr) {
  EventLoop* ioLoop = state->loop;
  // Bound to one address, every accepted socket's local address is that one;
  // bound to a wildcard, a connection looks its own up when asked. Either
  // way, no getsockname() per connection.
  std::optional<InetAddress> localAddr;
  if (!listenAddr_.isWildcard()) localAddr = listenAddr_;
  std::string connName =
      name_ + "#" + std::to_string(nextConnId_.fetch_add(1, std::memory_order_relaxed));
  TcpConnectionPtr conn = TcpConnection::create(ioLoop, std::move(connName), std::move(sockfd),
                                                localAddr, peerAddr, listenAddr_, layer_.get());
  if (tcpNoDelay_ && !noDelayInherited_) conn->setTcpNoDelay(true);
  if (maxQueuedOutput_) conn->setMaxQueuedOutput(*maxQueuedOutput_);
  if (state->idleWheel) conn->setIdleWheel(state->idleWheel.get());
  conn->setConnectionCallback(connectionCallback_);
  conn->setMessageCallback(messageCallback_);
  conn->setWriteCompleteCallback(writeCompleteCallback_);
  // On the connection's loop, which is state's. The state outlives every
  // call: tearDown() leaves no connection of its loop that could still close.
  conn->setCloseCallback([state](const TcpConnectionPtr& c) {
    if (state->serverAlive) removeConnection(state, c);
  });
  auto establish = [state, conn] {
    state->connections.emplace(conn.get(), conn);
    state->count.store(state->connections.size(), std::memory_order_relaxed);
    conn->connectEstablished();
  };
  if (ioLoop->isInLoopThread()) {
    establish();
  } else {
    ioLoop->queueInLoop(std::move(establish));
  }
}

void TcpServer::removeConnection(LoopState* state, const TcpConnectionPtr& conn) {
  if (state->connections.erase(conn.get()) == 0) return;
  state->count.store(state->connections.size(), std::memory_order_relaxed);
  // Queued, not run: we may be inside conn's own event handler right now.
  state->loop->queueInLoop([conn] { conn->connectDestroyed(); });
}

}  // namespace libnet
