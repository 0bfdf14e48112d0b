#include "net/TcpServer.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "base/CountDownLatch.h"
#include "base/CpuAffinity.h"
#include "base/Logging.h"
#include "base/Mutex.h"
#include "net/Acceptor.h"
#include "net/ConnectionCounters.h"
#include "net/EventLoop.h"
#include "net/EventLoopThreadPool.h"
#include "net/LoopInternals.h"
#include "net/Poller.h"
#include "net/ProxyHeaderReader.h"
#include "net/Socket.h"
#include "net/TcpConnection.h"
#include "net/TimingWheel.h"

namespace libnet {

namespace {

// An idle connection, when the application set no idle callback.
void closeIdle(const TcpConnectionPtr& conn) {
  LOG_DEBUG << conn->name() << " is idle, closing it";
  conn->forceClose();
}

// A draining connection, when the application set no drain callback: it
// closes once its queued output is written and the peer has closed.
void shutdownOnDrain(const TcpConnectionPtr& conn) { conn->shutdown(); }

// How long the destructor waits for the I/O loops to destroy their
// acceptors: they do so as soon as their current turn ends, unless a
// callback blocks one. Waiting longer than this is logged, and harmless:
// an acceptor still running shares what it uses and creates connections
// that its loop's tear-down, queued after it, destroys.
constexpr auto kAcceptorStopWait = std::chrono::seconds(10);
// How long start() waits for the I/O loops to register their receivers of
// ring-to-ring hand-overs (they do at once, unless a callback blocks one).
constexpr auto kReceiverStartWait = std::chrono::seconds(10);

// The header spells the default out, rather than include TcpConnection.h.
static_assert(TcpServer::kDefaultMaxQueuedOutput == TcpConnection::kDefaultMaxQueuedOutput);

// The constructor's checks, before anything is bound.
const TcpServer::Options& checked(const TcpServer::Options& options) {
  if (options.threads < 0) {
    throw std::invalid_argument("TcpServer: Options::threads is negative (" +
                                std::to_string(options.threads) + ")");
  }
  if (options.deferAccept < Duration::zero()) {
    throw std::invalid_argument("TcpServer: Options::deferAccept is negative");
  }
  if (options.idleTimeout < Duration::zero()) {
    throw std::invalid_argument("TcpServer: Options::idleTimeout is negative");
  }
  if (options.proxyProtocol.enabled && options.proxyProtocol.headerTimeout <= Duration::zero()) {
    throw std::invalid_argument("TcpServer: Options::proxyProtocol.headerTimeout must be positive");
  }
  if (!options.cpuAffinity.empty()) {
    if (options.threads == 0) {
      throw std::invalid_argument(
          "TcpServer: Options::cpuAffinity without I/O threads (the server's loop is the "
          "caller's thread: pinCurrentThread() pins it)");
    }
    checkCpus("TcpServer: Options::cpuAffinity", options.cpuAffinity);
  }
  // Throws std::invalid_argument with the reason for a bad tick.
  if (options.idleTimeout > Duration::zero()) {
    (void)TimingWheel::tickFor(options.idleTimeout, options.idleTick);
  }
  return options;
}

// TCP_DEFER_ACCEPT takes whole seconds: a shorter wait is one second, not off.
int deferAcceptSeconds(Duration d) {
  if (d <= Duration::zero()) return 0;
  return static_cast<int>(std::chrono::ceil<std::chrono::seconds>(d).count());
}

// Written by its loop only, read by any thread.
void bump(std::atomic<uint64_t>& counter) {
  counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The peer of an accepted socket whose accept did not say (io_uring's
// multishot accept, a ring-to-ring hand-over).
std::optional<SocketAddress> peerOf(int fd) {
  sockaddr_storage storage{};
  socklen_t len = sizeof storage;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&storage), &len) != 0) return std::nullopt;
  return SocketAddress::fromSockAddr(storage, len);
}

// A socket over a limit, about to be closed: gets `refusal` if it can take
// it now. What the peer already sent is read first: closing a socket with
// unread input sends a reset, which can overtake the refusal and make the
// peer drop it unread.
void refuse(int fd, const std::string& refusal) {
  if (refusal.empty()) return;
  char scratch[4096];
  for (int i = 0; i < 16; ++i) {
    if (::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) <= 0) break;
  }
  (void)::send(fd, refusal.data(), refusal.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

// The inherited sockets' checks (the second constructor): the first one's
// address, or a clear error.
SocketAddress inheritedAddress(const std::vector<UniqueFd>& sockets) {
  if (sockets.empty()) throw std::invalid_argument("TcpServer: no listening socket given");
  for (const UniqueFd& fd : sockets) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0) {
      throw std::system_error(errno, std::system_category(),
                              "TcpServer: listening fd " + std::to_string(fd.get()));
    }
    if (listening == 0) {
      throw std::system_error(EINVAL, std::system_category(),
                              "TcpServer: fd " + std::to_string(fd.get()) + " is not listening");
    }
  }
  return Socket::localAddress(sockets.front().get());
}

// A second fd for a listening socket that two loops share.
UniqueFd duplicate(int fd) {
  UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy) throw std::system_error(errno, std::system_category(), "dup of a listening socket");
  return copy;
}

}  // namespace

struct TcpServer::ConnectionFactory {
  std::string name;
  ConnectionCallback connectionCallback;
  MessageCallback messageCallback;
  WriteCompleteCallback writeCompleteCallback;
  std::shared_ptr<const ConnectionLayer> layer;  // null: plain TCP
  size_t maxQueuedOutput = 0;
  SocketAddress listenAddr;                     // as bound (the real port)
  mutable std::atomic<uint64_t> nextConnId{1};  // changes, as the limits' counts below
  // Options' connection limits (0: none) and what they count.
  size_t maxConnections = 0;
  size_t maxPerPeer = 0;
  std::string refusal;
  mutable std::atomic<size_t> open{0};  // with maxConnections: over all loops
  mutable Mutex peersMutex;
  // With maxPerPeer: open connections by client IP address.
  mutable std::unordered_map<std::string, size_t> peers LIBNET_GUARDED_BY(peersMutex);
  DrainCallback drainCallback;  // never null
};

// Also the loop's receiver of the sockets the accepting loop posts to its
// poller (kHandOver between io_uring loops): registered on the loop by
// startReceiving(), removed by tearDown().
struct TcpServer::LoopState final : Poller::FdReceiver {
  explicit LoopState(EventLoop* l) : loop(l) {}
  EventLoop* const loop;
  // The live connections, in no order: each knows its index
  // (TcpConnection::serverSlot_), and one that leaves takes the last one's
  // place, so adding and removing cost no allocation (the vector keeps its
  // capacity).
  std::vector<TcpConnectionPtr> connections;
  std::atomic<size_t> count{0};            // connections.size(), for other threads
  std::unique_ptr<TimingWheel> idleWheel;  // while the idle timeout is on
  std::unique_ptr<Acceptor> acceptor;      // kPerLoop with I/O threads
  bool serverAlive = true;                 // until tearDown()
  // Inherited sockets, kPerLoop: this loop's acceptors after the first.
  std::vector<std::unique_ptr<Acceptor>> moreAcceptors;
  // What this loop's connections were made with: the layer that made their
  // I/O strategies lives at least until tearDown() has destroyed them. Held
  // here rather than by each connection's close callback, which then
  // captures one pointer and needs no allocation of its own.
  std::shared_ptr<const ConnectionFactory> factory;
  // The receiver's token on this loop's poller, written by this loop and
  // published to the accepting loop by receiving (release/acquire); until
  // then the accepting loop hands connections over through the queue.
  uint64_t receiverToken = 0;
  std::atomic<bool> receiving{false};
  // Sockets the accepting loop handed to this one (kHandOver): read and
  // written on the accepting loop only. What ended of them is counted by
  // closed, refused and the header reader's rejected() (liveHandedTo()).
  uint64_t handedOver = 0;
  // loopStats(): written by this loop only.
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> ringHandOvers{0};
  // Options::proxyProtocol on: where new sockets wait for their header.
  std::shared_ptr<ProxyHeaderReader> proxyReader;
  std::atomic<uint64_t> closed{0};
  std::atomic<uint64_t> refused{0};
  ConnectionCounters counters;  // bytes of this loop's connections
  // LoopStats::queuedOutput: the loop's last sum of its connections' queued
  // bytes, and whether a request for the next one waits in its queue.
  std::atomic<size_t> queuedOutput{0};
  std::atomic<bool> queuedSumAsked{false};
  // Graceful drain, this loop's part: set when the server tells (or
  // forces) its connections; a connection made later is told (or closed)
  // as it comes up, and the last one to leave reports through the watch.
  bool draining = false;
  bool forcing = false;
  std::shared_ptr<DrainWatch> drainWatch;

  // A socket handed over ring to ring. None is delivered here after
  // tearDown(), which removes the receiver: the poller closes what arrives
  // later.
  void onFdPosted(UniqueFd fd) override {
    ringHandOvers.store(ringHandOvers.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    if (serverAlive) newConnection(this, std::move(fd), std::nullopt);
  }
};

// The server's side of a drain, on its loop.
struct TcpServer::DrainState {
  std::vector<std::function<void()>> done;
  MonoTime deadline;
  TimerId timer;
  size_t acceptorsLeft = 0;  // still stopping
  bool forceAsked = false;   // the deadline came while acceptors were stopping
  bool forced = false;       // forceLoop() queued to every loop
  size_t loopsTold = 0;      // loops that told their connections
  size_t loopsForced = 0;    // loops that force-closed theirs
  bool finished = false;
};

TcpServer::TcpServer(EventLoop* loop, const SocketAddress& listenAddr, std::string name)
    : TcpServer(loop, listenAddr, std::move(name), Options{}) {}

TcpServer::TcpServer(EventLoop* loop, const SocketAddress& listenAddr, std::string name,
                     Options options)
    : loop_(loop),
      name_(std::move(name)),
      options_(checked(options)),
      acceptor_(
          std::make_unique<Acceptor>(loop, listenAddr, options_.reusePort, options_.unixFileMode)),
      threadPool_(std::make_unique<EventLoopThreadPool>(loop, name_, options_.threads,
                                                        options_.cpuAffinity)),
      connectionCallback_(defaultConnectionCallback),
      messageCallback_(defaultMessageCallback),
      listenAddr_(acceptor_->localAddress()) {}

TcpServer::TcpServer(EventLoop* loop, std::vector<UniqueFd> listeningSockets, std::string name)
    : TcpServer(loop, std::move(listeningSockets), std::move(name), Options{}) {}

TcpServer::TcpServer(EventLoop* loop, std::vector<UniqueFd> listeningSockets, std::string name,
                     Options options)
    : loop_(loop),
      name_(std::move(name)),
      options_(checked(options)),
      threadPool_(std::make_unique<EventLoopThreadPool>(loop, name_, options_.threads,
                                                        options_.cpuAffinity)),
      connectionCallback_(defaultConnectionCallback),
      messageCallback_(defaultMessageCallback),
      listenAddr_(inheritedAddress(listeningSockets)),
      inherited_(std::move(listeningSockets)) {}

TcpServer::~TcpServer() {
  loop_->assertInLoopThread();
  if (drainWatch_) drainWatch_->server = nullptr;
  if (drain_ && drain_->timer.valid()) loop_->cancel(drain_->timer);
  // No connection is made from here on: the server's own acceptor is on this
  // thread; each per-loop acceptor is destroyed on its loop, waited for.
  acceptor_.reset();
  moreAcceptors_.clear();
  stopPerLoopAcceptors();
  // Sockets handed over ring to ring (kHandOver) that this loop's ring has
  // not submitted yet leave now: this loop does not turn again before the
  // I/O loops are destroyed below, and a post must leave before its target
  // ring goes. From here every socket handed over is accounted for:
  // - through a queue: its functor runs on the I/O loop before the
  //   tear-down queued below, and the connection it makes is destroyed
  //   there;
  // - ring to ring, arrived before the tear-down: a connection, destroyed
  //   there likewise;
  // - ring to ring, arriving after it: the tear-down removed the loop's
  //   receiver, and the poller closes the socket on arrival. The I/O
  //   loop's destructor turns its poller until every post counted for it
  //   has arrived (bounded, 2 s), so none lands in a closed ring;
  // - refused by the kernel (the target's CQ out of room, ...): it comes
  //   back to this loop's ring, which closes it when this loop next turns,
  //   or when it is destroyed. (Such a post keeps its target loop waiting
  //   for it until that bound.)
  LoopInternals::poller(*loop_).flushPosts();
  // Each loop destroys its own connections and wheel, from its queue: after
  // whatever was queued to it before (a hand-over queued from this thread
  // lands first, so its connection is in the map by then; and so does the
  // destruction of a connection removed earlier, still queued).
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    state->loop->queueInLoop([state] { tearDown(state.get()); });
  }
  loopStates_.clear();
  // The I/O loops run what was queued to them and their threads are joined
  // here, while every other member is still alive. Without I/O threads the
  // tear-down runs on this loop's next turn (or when it is destroyed).
  threadPool_.reset();
}

void TcpServer::stopPerLoopAcceptors() {
  // Each loop's own thread may be resetting its acceptor (a drain): which
  // loops have one is known here from start(), not read from the states.
  if (!perLoop_) return;
  const std::vector<std::shared_ptr<LoopState>>& withAcceptor = loopStates_;
  auto stopped = std::make_shared<CountDownLatch>(static_cast<int>(withAcceptor.size()));
  for (const std::shared_ptr<LoopState>& state : withAcceptor) {
    // Queued after the acceptor's own start (Acceptor::listen()), so it
    // never overtakes it.
    state->loop->runInLoop([state, stopped] {
      state->acceptor.reset();
      state->moreAcceptors.clear();
      stopped->countDown();
    });
  }
  EventLoop::noteBlockingWait();
  if (!stopped->waitFor(kAcceptorStopWait)) {
    LOG_ERROR << "TcpServer " << name_ << ": " << stopped->count()
              << " I/O loop(s) did not stop accepting within "
              << std::chrono::duration_cast<std::chrono::seconds>(kAcceptorStopWait).count()
              << " s; their connections are torn down when their loops get to it";
  }
}

void TcpServer::tearDown(LoopState* state) {
  state->serverAlive = false;
  state->acceptor.reset();
  state->proxyReader.reset();  // closes the sockets still without a header
  state->moreAcceptors.clear();
  if (state->receiving.load(std::memory_order_relaxed)) {
    LoopInternals::poller(*state->loop).removeFdReceiver(state->receiverToken);
  }
  // Taken out first: a (down) callback run from here finds the map empty.
  std::vector<TcpConnectionPtr> connections;
  connections.swap(state->connections);
  state->count.store(0, std::memory_order_relaxed);
  for (const TcpConnectionPtr& conn : connections) conn->connectDestroyed();
  connections.clear();
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

SocketAddress TcpServer::listenAddress() const { return listenAddr_; }

void TcpServer::checkNotStarted(const char* what) const {
  if (started_) {
    throw std::logic_error("TcpServer " + name_ + ": " + what +
                           "() after start() (connections are made with what start() copied)");
  }
}

void TcpServer::setThreadInitCallback(ThreadInitCallback cb) {
  checkNotStarted("setThreadInitCallback");
  threadInitCallback_ = std::move(cb);
}

void TcpServer::setIdleCallback(IdleCallback cb) {
  checkNotStarted("setIdleCallback");
  idleCallback_ = std::move(cb);
}

void TcpServer::setConnectionCallback(ConnectionCallback cb) {
  checkNotStarted("setConnectionCallback");
  connectionCallback_ = std::move(cb);
}

void TcpServer::setMessageCallback(MessageCallback cb) {
  checkNotStarted("setMessageCallback");
  messageCallback_ = std::move(cb);
}

void TcpServer::reconfigure(const char* what, Options options) {
  checkNotStarted(what);
  const int threadsBefore = options_.threads;
  options_ = checked(options);
  // The pool is made in the constructor, and not started before start().
  if (options_.threads != threadsBefore) {
    threadPool_ =
        std::make_unique<EventLoopThreadPool>(loop_, name_, options_.threads, options_.cpuAffinity);
  }
}

void TcpServer::setThreadNum(int numThreads) {
  Options changed = options_;
  changed.threads = numThreads;
  reconfigure("setThreadNum", std::move(changed));
}

void TcpServer::setAcceptMode(AcceptMode mode) {
  Options changed = options_;
  changed.acceptMode = mode;
  reconfigure("setAcceptMode", std::move(changed));
}

void TcpServer::setDeferAccept(int seconds) {
  Options changed = options_;
  changed.deferAccept = std::chrono::seconds(seconds);
  reconfigure("setDeferAccept", std::move(changed));
}

void TcpServer::setTcpNoDelay(bool on) {
  Options changed = options_;
  changed.tcpNoDelay = on;
  reconfigure("setTcpNoDelay", std::move(changed));
}

void TcpServer::setConnectionLayer(std::shared_ptr<const ConnectionLayer> layer) {
  Options changed = options_;
  changed.layer = std::move(layer);
  reconfigure("setConnectionLayer", std::move(changed));
}

void TcpServer::setMaxQueuedOutput(size_t bytes) {
  Options changed = options_;
  changed.maxQueuedOutput = bytes;
  reconfigure("setMaxQueuedOutput", std::move(changed));
}

void TcpServer::setIdleTimeout(Duration timeout, Duration tick) {
  Options changed = options_;
  changed.idleTimeout = timeout;
  changed.idleTick = tick;
  reconfigure("setIdleTimeout", std::move(changed));
}

void TcpServer::setWriteCompleteCallback(WriteCompleteCallback cb) {
  checkNotStarted("setWriteCompleteCallback");
  writeCompleteCallback_ = std::move(cb);
}

void TcpServer::setDrainCallback(DrainCallback cb) {
  checkNotStarted("setDrainCallback");
  drainCallback_ = std::move(cb);
}

void TcpServer::start() {
  loop_->assertInLoopThread();
  if (started_) return;
  listeningFds_ = listeningFds();
  threadPool_->start(threadInitCallback_);
  withIoThreads_ = threadPool_->allLoops().front() != loop_;
  // A Unix path or name can be bound by one socket only: no socket per loop.
  const bool perLoop =
      options_.acceptMode == AcceptMode::kPerLoop && withIoThreads_ && !listenAddr_.isUnix();
  const IdleCallback onIdle = idleCallback_ ? idleCallback_ : IdleCallback(closeIdle);
  for (EventLoop* ioLoop : threadPool_->allLoops()) {
    auto state = std::make_shared<LoopState>(ioLoop);
    // Built here, used only on ioLoop from now on: the connections learn of
    // it through newConnection(), and the queue that carries a connection
    // (or the per-loop acceptor's start) to ioLoop orders the two.
    if (options_.idleTimeout > Duration::zero()) {
      state->idleWheel =
          std::make_unique<TimingWheel>(ioLoop, options_.idleTimeout, options_.idleTick, onIdle);
    }
    loopStates_.push_back(std::move(state));
  }
  factory_ = std::make_shared<ConnectionFactory>();
  factory_->name = name_;
  factory_->connectionCallback = connectionCallback_;
  factory_->messageCallback = messageCallback_;
  factory_->writeCompleteCallback = writeCompleteCallback_;
  factory_->layer = options_.layer;
  factory_->maxQueuedOutput = options_.maxQueuedOutput;
  factory_->listenAddr = listenAddr_;
  factory_->maxConnections = options_.maxConnections;
  factory_->maxPerPeer = options_.maxConnectionsPerPeer;
  factory_->refusal = options_.refusal;
  factory_->drainCallback = drainCallback_ ? drainCallback_ : DrainCallback(shutdownOnDrain);
  perLoop_ = perLoop;
  for (const std::shared_ptr<LoopState>& state : loopStates_) state->factory = factory_;
  if (options_.proxyProtocol.enabled) startProxyHeaderReaders();
  // TCP_NODELAY (Options::tcpNoDelay) goes on the listening socket(s), whose
  // accepted sockets inherit it: no setsockopt per connection.
  if (perLoop && !inherited_.empty()) {
    startInheritedPerLoop();
  } else if (perLoop) {
    startPerLoopAcceptors();
    listeningFds_.clear();
    for (const std::shared_ptr<LoopState>& state : loopStates_) {
      listeningFds_.push_back(state->acceptor->fd());
    }
  } else {
    startServerLoopAcceptors();
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
    if (options_.tcpNoDelay) acceptor->setTcpNoDelay(true);
    if (const int seconds = deferAcceptSeconds(options_.deferAccept); seconds > 0) {
      acceptor->setDeferAccept(seconds);
    }
    // Nothing of the server itself: the acceptor runs on its loop until
    // ~TcpServer has it destroyed there. The state owns the acceptor.
    acceptor->setNewConnectionCallback(
        [s = state.get()](UniqueFd fd, const std::optional<SocketAddress>& peer) {
          newConnection(s, std::move(fd), peer);
        });
    state->acceptor = std::move(acceptor);
  }
  // Listening only once all are bound, so that a failure leaves none half
  // started; each starts taking connections on its own loop.
  for (const std::shared_ptr<LoopState>& state : loopStates_) state->acceptor->listen();
}

void TcpServer::startServerLoopAcceptors() {
  if (!inherited_.empty()) adoptInheritedOnServerLoop();
  // The acceptors are on this loop and destroyed first by ~TcpServer, so
  // they may use the server.
  auto onAccepted = [this](UniqueFd fd, const std::optional<SocketAddress>& peer) {
    ++acceptedByServer_;
    LoopState* state = chooseLoop();
    if (state->loop == loop_) {
      newConnection(state, std::move(fd), peer);
    } else {
      handOver(state, std::move(fd), peer);
    }
  };
  applySocketOptions(*acceptor_);
  acceptor_->setNewConnectionCallback(onAccepted);
  for (const std::unique_ptr<Acceptor>& more : moreAcceptors_) {
    applySocketOptions(*more);
    more->setNewConnectionCallback(onAccepted);
  }
  if (withIoThreads_ && options_.ringHandOver) startRingHandOver();
  acceptor_->listen();
  for (const std::unique_ptr<Acceptor>& more : moreAcceptors_) more->listen();
}

TcpServer::LoopState* TcpServer::chooseLoop() {
  const size_t loops = loopStates_.size();
  size_t chosen = nextLoop_ % loops;
  if (options_.handOver == HandOver::kLeastConnections) {
    // From the one after the last chosen: among equals, the first found,
    // so that equals take turns as under round-robin.
    uint64_t least = liveHandedTo(*loopStates_[chosen]);
    for (size_t k = 1; k < loops && least > 0; ++k) {
      const size_t i = (nextLoop_ + k) % loops;
      const uint64_t live = liveHandedTo(*loopStates_[i]);
      if (live < least) {
        least = live;
        chosen = i;
      }
    }
  }
  nextLoop_ = chosen + 1;
  LoopState* state = loopStates_[chosen].get();
  ++state->handedOver;
  return state;
}

uint64_t TcpServer::liveHandedTo(const LoopState& state) {
  // Relaxed: a count read late is one that ended a moment ago, seen as
  // still live; each loop's counts only grow, and never pass what was
  // handed to it, which this thread wrote itself.
  const uint64_t ended = state.closed.load(std::memory_order_relaxed) +
                         state.refused.load(std::memory_order_relaxed) +
                         (state.proxyReader ? state.proxyReader->rejected() : 0);
  return state.handedOver > ended ? state.handedOver - ended : 0;
}

void TcpServer::applySocketOptions(Acceptor& acceptor) const {
  if (options_.tcpNoDelay) acceptor.setTcpNoDelay(true);
  if (const int seconds = deferAcceptSeconds(options_.deferAccept); seconds > 0) {
    acceptor.setDeferAccept(seconds);
  }
}

void TcpServer::adoptInheritedOnServerLoop() {
  acceptor_ = std::make_unique<Acceptor>(loop_, std::move(inherited_.front()));
  for (size_t i = 1; i < inherited_.size(); ++i) {
    moreAcceptors_.push_back(std::make_unique<Acceptor>(loop_, std::move(inherited_[i])));
  }
  inherited_.clear();
}

void TcpServer::startInheritedPerLoop() {
  const size_t loops = loopStates_.size();
  const size_t sockets = inherited_.size();
  std::vector<Acceptor*> bySocket;  // the first acceptor of each socket
  for (size_t k = 0; k < std::max(loops, sockets); ++k) {
    LoopState* state = loopStates_[k % loops].get();
    UniqueFd fd = k < sockets ? std::move(inherited_[k]) : duplicate(bySocket[k % sockets]->fd());
    auto acceptor = std::make_unique<Acceptor>(state->loop, std::move(fd));
    applySocketOptions(*acceptor);
    // As in startPerLoopAcceptors(): nothing of the server itself.
    acceptor->setNewConnectionCallback(
        [state](UniqueFd accepted, const std::optional<SocketAddress>& peer) {
          newConnection(state, std::move(accepted), peer);
        });
    if (k < sockets) bySocket.push_back(acceptor.get());
    if (!state->acceptor) {
      state->acceptor = std::move(acceptor);
    } else {
      state->moreAcceptors.push_back(std::move(acceptor));
    }
  }
  inherited_.clear();
  // Listening only once all are made, so that a failure leaves none started.
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    state->acceptor->listen();
    for (const std::unique_ptr<Acceptor>& more : state->moreAcceptors) more->listen();
  }
}

std::vector<int> TcpServer::listeningFds() const {
  loop_->assertInLoopThread();
  // Draining, the acceptors close their sockets: the numbers would be stale.
  if (drain_) return {};
  if (started_) return listeningFds_;
  std::vector<int> fds;
  if (acceptor_) fds.push_back(acceptor_->fd());
  for (const UniqueFd& fd : inherited_) fds.push_back(fd.get());
  return fds;
}

size_t TcpServer::connectionCount() const {
  size_t total = 0;
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    total += state->count.load(std::memory_order_relaxed);
  }
  return total;
}

std::vector<TcpServer::LoopStats> TcpServer::loopStats() const {
  std::vector<LoopStats> stats;
  stats.reserve(loopStates_.size());
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    const ConnectionCounters& bytes = state->counters;
    stats.push_back({.connections = state->count.load(std::memory_order_relaxed),
                     .accepted = state->accepted.load(std::memory_order_relaxed),
                     .ringHandOvers = state->ringHandOvers.load(std::memory_order_relaxed),
                     .proxyRejected = state->proxyReader ? state->proxyReader->rejected() : 0,
                     .closed = state->closed.load(std::memory_order_relaxed),
                     .refused = state->refused.load(std::memory_order_relaxed),
                     .bytesReceived = bytes.bytesReceived.load(std::memory_order_relaxed),
                     .bytesSent = bytes.bytesSent.load(std::memory_order_relaxed),
                     .queuedOutput = state->queuedOutput.load(std::memory_order_relaxed)});
  }
  return stats;
}

std::vector<EventLoop*> TcpServer::ioLoops() const {
  std::vector<EventLoop*> loops;
  loops.reserve(loopStates_.size());
  for (const std::shared_ptr<LoopState>& state : loopStates_) loops.push_back(state->loop);
  return loops;
}

size_t TcpServer::sumQueuedOutput(LoopState* state) {
  size_t bytes = 0;
  for (const TcpConnectionPtr& conn : state->connections) bytes += conn->queuedOutputBytes();
  state->queuedOutput.store(bytes, std::memory_order_relaxed);
  return bytes;
}

void TcpServer::refreshQueuedOutput() const {
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    // However many ask at once (scrapes on every loop), a loop's queue holds
    // one request: a loop stuck in a callback cannot pile them up.
    if (state->queuedSumAsked.exchange(true, std::memory_order_relaxed)) continue;
    state->loop->runInLoop([state] {
      // Cleared first: a request that comes during the sum gets a later one.
      state->queuedSumAsked.store(false, std::memory_order_relaxed);
      sumQueuedOutput(state.get());
    });
  }
}

std::vector<size_t> TcpServer::queuedOutput(Duration wait) const {
  std::vector<size_t> result;
  result.reserve(loopStates_.size());
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    // Shared with the functor, which may outlive a wait that timed out.
    auto sum = std::make_shared<std::atomic<size_t>>(0);
    auto done = std::make_shared<CountDownLatch>(1);
    state->loop->runInLoop([state, sum, done] {
      sum->store(sumQueuedOutput(state.get()), std::memory_order_relaxed);
      done->countDown();
    });
    if (!state->loop->isInLoopThread()) EventLoop::noteBlockingWait();
    result.push_back(done->waitFor(wait) ? sum->load(std::memory_order_relaxed) : 0);
  }
  return result;
}

bool TcpServer::admit(LoopState* state, int fd, std::optional<SocketAddress>* peer,
                      std::string* peerKey) {
  const ConnectionFactory& f = *state->factory;
  if (f.maxConnections > 0 && f.open.fetch_add(1, std::memory_order_relaxed) >= f.maxConnections) {
    f.open.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  if (f.maxPerPeer == 0) return true;
  if (!*peer) *peer = peerOf(fd);
  if (!*peer || (*peer)->isUnix()) return true;
  std::string key = (*peer)->toIp();
  MutexLock lock(f.peersMutex);
  size_t& open = f.peers[key];
  if (open >= f.maxPerPeer) {
    lock.unlock();
    if (f.maxConnections > 0) f.open.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  ++open;
  *peerKey = std::move(key);
  return true;
}

void TcpServer::release(LoopState* state, const std::string& peerKey) {
  const ConnectionFactory& f = *state->factory;
  if (f.maxConnections > 0) f.open.fetch_sub(1, std::memory_order_relaxed);
  if (peerKey.empty()) return;
  MutexLock lock(f.peersMutex);
  auto it = f.peers.find(peerKey);
  if (it != f.peers.end() && --it->second == 0) f.peers.erase(it);
}

void TcpServer::startRingHandOver() {
  std::vector<std::shared_ptr<LoopState>> receivers;
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    if (LoopInternals::poller(*loop_).canPostTo(LoopInternals::poller(*state->loop)))
      receivers.push_back(state);
  }
  if (receivers.empty()) return;
  // Each I/O loop registers its receiver itself (its poller is its own),
  // queued after everything above that it reads; waited for, so that from
  // the first connection on every hand-over goes ring to ring. A loop that
  // does not get to it in time (a thread-init callback still running) is
  // handed connections through its queue until it has.
  auto registered = std::make_shared<CountDownLatch>(static_cast<int>(receivers.size()));
  for (const std::shared_ptr<LoopState>& state : receivers) {
    state->loop->queueInLoop([state, registered] {
      startReceiving(state.get());
      registered->countDown();
    });
  }
  EventLoop::noteBlockingWait();
  if (!registered->waitFor(kReceiverStartWait)) {
    LOG_WARN << "TcpServer " << name_ << ": " << registered->count()
             << " I/O loop(s) not ready for ring-to-ring hand-over yet; their queues carry "
                "connections until they are";
  }
}

void TcpServer::startReceiving(LoopState* state) {
  state->receiverToken = LoopInternals::poller(*state->loop).addFdReceiver(state);
  if (state->receiverToken != 0) state->receiving.store(true, std::memory_order_release);
}

void TcpServer::handOver(LoopState* state, UniqueFd sockfd,
                         const std::optional<SocketAddress>& peerAddr) {
  // The connection (and its I/O strategy, from that loop's backend) is made
  // on the loop that owns it: nothing of one loop is built from another's
  // thread. Ring to ring, the socket leaves with this loop's next
  // submission and the I/O loop's poller hands it to its state
  // (LoopState::onFdPosted); the multishot accept of an io_uring acceptor
  // reports no peer address anyway. The state outlives both: ~TcpServer
  // flushes the posts and queues the tear-down from this thread, after this.
  if (state->receiving.load(std::memory_order_acquire)) {
    LoopInternals::poller(*loop_).postFd(LoopInternals::poller(*state->loop), state->receiverToken,
                                         std::move(sockfd));
    return;
  }
  state->loop->queueInLoop([state, fd = std::move(sockfd), peerAddr]() mutable {
    newConnection(state, std::move(fd), peerAddr);
  });
}

void TcpServer::newConnection(LoopState* state, UniqueFd sockfd,
                              const std::optional<SocketAddress>& peerAddr,
                              const std::optional<SocketAddress>* proxied) {
  const ConnectionFactory& f = *state->factory;
  EventLoop* ioLoop = state->loop;
  ioLoop->assertInLoopThread();
  if (state->proxyReader && proxied == nullptr) {
    state->proxyReader->add(std::move(sockfd), peerAddr);
    return;
  }
  std::optional<SocketAddress> peer = peerAddr;
  std::string peerKey;
  const bool limited = f.maxConnections > 0 || f.maxPerPeer > 0;
  if (limited && !admit(state, sockfd.get(), &peer, &peerKey)) {
    refuse(sockfd.get(), f.refusal);
    bump(state->refused);
    reportEmpty(state);  // draining: this socket too has reached its end
    return;              // sockfd closes
  }
  // Bound to one address, every accepted socket's local address is that one;
  // bound to a wildcard, a connection looks its own up when asked. Either
  // way, no getsockname() per connection.
  std::optional<SocketAddress> localAddr;
  if (!f.listenAddr.isWildcard()) localAddr = f.listenAddr;
  if (proxied != nullptr && proxied->has_value()) localAddr = *proxied;
  std::string connName =
      f.name + "#" + std::to_string(f.nextConnId.fetch_add(1, std::memory_order_relaxed));
  TcpConnectionPtr conn = TcpConnection::create(ioLoop, std::move(connName), std::move(sockfd),
                                                localAddr, peer, f.listenAddr, f.layer.get());
  conn->setMaxQueuedOutput(f.maxQueuedOutput);
  conn->setCounters(&state->counters);
  if (state->idleWheel) conn->setIdleWheel(state->idleWheel.get());
  conn->setConnectionCallback(f.connectionCallback);
  conn->setMessageCallback(f.messageCallback);
  conn->setWriteCompleteCallback(f.writeCompleteCallback);
  setCloseCallback(state, conn, limited, std::move(peerKey));
  conn->serverSlot_ = static_cast<uint32_t>(state->connections.size());
  state->connections.push_back(conn);
  state->count.store(state->connections.size(), std::memory_order_relaxed);
  state->accepted.store(state->accepted.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  conn->connectEstablished();
  if (!state->draining || !conn->connected()) return;
  if (state->forcing) {
    conn->forceClose();
  } else {
    f.drainCallback(conn);
  }
}

void TcpServer::setCloseCallback(LoopState* state, const TcpConnectionPtr& conn, bool limited,
                                 std::string peerKey) {
  // On the connection's loop, which is state's. The state outlives every
  // call: tearDown() leaves no connection of its loop that could still close.
  // Without limits the callback captures one pointer (no allocation).
  if (limited) {
    conn->setCloseCallback([state, key = std::move(peerKey)](const TcpConnectionPtr& c) {
      if (!state->serverAlive) return;
      release(state, key);
      removeConnection(state, c);
    });
  } else {
    conn->setCloseCallback([state](const TcpConnectionPtr& c) {
      if (state->serverAlive) removeConnection(state, c);
    });
  }
}

void TcpServer::startProxyHeaderReaders() {
  // Built here, used on each state's loop only (as the idle wheel). The
  // reader belongs to the state, which outlives it: tearDown() destroys it.
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    state->proxyReader = std::make_shared<ProxyHeaderReader>(
        state->loop, name_, options_.proxyProtocol.headerTimeout, options_.proxyProtocol.trusted,
        [s = state.get()](UniqueFd fd, const std::optional<SocketAddress>& peer,
                          const std::optional<SocketAddress>& local) {
          newConnection(s, std::move(fd), peer, &local);
        });
    state->proxyReader->setRejectedCallback([s = state.get()] { reportEmpty(s); });
  }
}

void TcpServer::removeConnection(LoopState* state, const TcpConnectionPtr& conn) {
  std::vector<TcpConnectionPtr>& connections = state->connections;
  const size_t slot = conn->serverSlot_;
  if (slot >= connections.size() || connections[slot] != conn) return;
  TcpConnectionPtr leaving = std::move(connections[slot]);
  if (slot + 1 != connections.size()) {
    connections[slot] = std::move(connections.back());
    connections[slot]->serverSlot_ = static_cast<uint32_t>(slot);
  }
  connections.pop_back();
  state->count.store(connections.size(), std::memory_order_relaxed);
  bump(state->closed);
  // Queued, not run: we may be inside conn's own event handler right now.
  state->loop->queueInLoop([leaving = std::move(leaving)] { leaving->connectDestroyed(); });
  if (state->draining && connections.empty()) reportEmpty(state);
}

void TcpServer::drain(Duration deadline, std::function<void()> done) {
  loop_->assertInLoopThread();
  if (!started_) {
    if (done) done();
    return;
  }
  const MonoTime due = MonoClock::now() + std::max(deadline, Duration::zero());
  if (drain_) {
    if (done && drain_->finished) {
      loop_->queueInLoop(std::move(done));
      return;
    }
    if (done) drain_->done.push_back(std::move(done));
    if (!drain_->forced && !drain_->forceAsked && due < drain_->deadline) armDrainDeadline(due);
    return;
  }
  drain_ = std::make_unique<DrainState>();
  drainWatch_ = std::make_shared<DrainWatch>(DrainWatch{this, loop_});
  if (done) drain_->done.push_back(std::move(done));
  armDrainDeadline(due);
  stopAccepting();
}

bool TcpServer::stoppedAccepting() const {
  loop_->assertInLoopThread();
  return drain_ != nullptr && drain_->acceptorsLeft == 0;
}

void TcpServer::armDrainDeadline(MonoTime due) {
  if (drain_->timer.valid()) loop_->cancel(drain_->timer);
  drain_->deadline = due;
  drain_->timer = loop_->runAt(due, [watch = drainWatch_] {
    if (watch->server) watch->server->forceDrain();
  });
}

void TcpServer::stopAccepting() {
  std::shared_ptr<DrainWatch> watch = drainWatch_;
  if (!perLoop_) {
    // The first inherited socket's acceptor and the others' (moreAcceptors_).
    drain_->acceptorsLeft = 1 + moreAcceptors_.size();
    auto stopped = [this, watch] {
      // Not from inside the acceptor's own completion handler.
      loop_->queueInLoop([watch] {
        if (watch->server) watch->server->onAcceptorStopped();
      });
    };
    acceptor_->stopAccepting(stopped);
    for (const std::unique_ptr<Acceptor>& more : moreAcceptors_) more->stopAccepting(stopped);
    return;
  }
  // Each loop's acceptors: fixed since start(), so counted here.
  drain_->acceptorsLeft = 0;
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    drain_->acceptorsLeft += 1 + state->moreAcceptors.size();
  }
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    state->loop->runInLoop([state, watch] {
      // None: the server is being destroyed (tearDown() ran).
      if (!state->acceptor) return;
      auto left = std::make_shared<size_t>(1 + state->moreAcceptors.size());
      auto stopped = [state, watch, left] {
        if (--*left == 0) {
          state->loop->queueInLoop([state] {
            state->acceptor.reset();
            state->moreAcceptors.clear();
          });
        }
        watch->loop->runInLoop([watch] {
          if (watch->server) watch->server->onAcceptorStopped();
        });
      };
      state->acceptor->stopAccepting(stopped);
      for (const std::unique_ptr<Acceptor>& more : state->moreAcceptors) {
        more->stopAccepting(stopped);
      }
    });
  }
}

void TcpServer::onAcceptorStopped() {
  if (--drain_->acceptorsLeft > 0) return;
  if (!perLoop_) {
    acceptor_.reset();
    moreAcceptors_.clear();
  }
  LOG_DEBUG << "TcpServer " << name_ << " stopped accepting; draining " << connectionCount()
            << " connection(s)";
  if (drain_->forceAsked) {
    forceDrain();
  } else {
    tellConnections();
  }
}

void TcpServer::tellConnections() {
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    state->loop->runInLoop([state, watch = drainWatch_] { drainLoop(state.get(), watch); });
  }
}

void TcpServer::drainLoop(LoopState* state, const std::shared_ptr<DrainWatch>& watch) {
  state->draining = true;
  state->drainWatch = watch;
  // A copy: a callback may close its connection, which leaves the list.
  const std::vector<TcpConnectionPtr> connections = state->connections;
  for (const TcpConnectionPtr& conn : connections) {
    if (conn->connected()) state->factory->drainCallback(conn);
  }
  report(watch, Report::kTold);
}

void TcpServer::forceDrain() {
  drain_->timer = TimerId();
  if (drain_->finished || drain_->forced) return;
  if (drain_->acceptorsLeft > 0) {
    drain_->forceAsked = true;  // onAcceptorStopped() comes back here
    return;
  }
  drain_->forced = true;
  LOG_INFO << "TcpServer " << name_ << ": drain deadline, closing " << connectionCount()
           << " connection(s)";
  for (const std::shared_ptr<LoopState>& state : loopStates_) {
    state->loop->runInLoop([state, watch = drainWatch_] { forceLoop(state.get(), watch); });
  }
}

void TcpServer::forceLoop(LoopState* state, const std::shared_ptr<DrainWatch>& watch) {
  state->draining = true;
  state->forcing = true;
  state->drainWatch = watch;
  const std::vector<TcpConnectionPtr> connections = state->connections;
  for (const TcpConnectionPtr& conn : connections) conn->forceClose();
  // Queued behind the closes forceClose() queued.
  state->loop->queueInLoop([watch] { report(watch, Report::kForced); });
}

void TcpServer::reportEmpty(LoopState* state) {
  if (state->drainWatch) report(state->drainWatch, Report::kEmpty);
}

void TcpServer::report(const std::shared_ptr<DrainWatch>& watch, Report what) {
  watch->loop->runInLoop([watch, what] {
    if (watch->server) watch->server->onLoopReport(what);
  });
}

void TcpServer::onLoopReport(Report what) {
  if (what == Report::kTold) ++drain_->loopsTold;
  if (what == Report::kForced) ++drain_->loopsForced;
  finishDrainIfDone();
}

void TcpServer::finishDrainIfDone() {
  DrainState& d = *drain_;
  if (d.finished) return;
  if (d.forced) {
    if (d.loopsForced < loopStates_.size()) return;
  } else {
    if (d.loopsTold < loopStates_.size() || connectionCount() != 0) return;
    // kHandOver: a socket handed over ring to ring may still be on its way
    // (or waiting for its PROXY protocol header). Every socket ends as a
    // connection, a refusal (limits) or a rejected header.
    uint64_t made = 0;
    for (const std::shared_ptr<LoopState>& state : loopStates_) {
      made += state->accepted.load(std::memory_order_relaxed) +
              state->refused.load(std::memory_order_relaxed) +
              (state->proxyReader ? state->proxyReader->rejected() : 0);
    }
    if (!perLoop_ && made != acceptedByServer_) return;
  }
  d.finished = true;
  if (d.timer.valid()) loop_->cancel(d.timer);
  d.timer = TimerId();
  std::vector<std::function<void()>> done;
  done.swap(d.done);
  for (std::function<void()>& f : done) f();
}

}  // namespace libnet
