#include "net/grpc/Channel.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <utility>

#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/SocketAddress.h"
#include "net/dns/Resolver.h"
#include "net/grpc/ClientCall.h"
#include "net/http2/ClientConnection.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"

namespace libnet::grpc {

namespace {

struct Target {
  std::string host;
  uint16_t port = 0;
};

Target parseTarget(std::string_view target) {
  std::string_view text = target;
  if (text.starts_with("dns:///")) {
    text.remove_prefix(7);
  } else if (text.starts_with("ipv4:") || text.starts_with("ipv6:")) {
    text.remove_prefix(5);
  }
  const auto split = InetAddress::splitHostPort(text);
  if (!split || split->first.empty()) {
    throw std::invalid_argument("grpc::Channel: target \"" + std::string(target) +
                                "\" is not host:port");
  }
  return Target{std::string(split->first), split->second};
}

void checkOptions(const Channel::Options& options) {
  if (options.initialBackoff <= Duration::zero() || options.maxBackoff <= Duration::zero() ||
      options.minConnectTimeout <= Duration::zero() || options.backoffMultiplier < 1.0 ||
      options.backoffJitter < 0.0 || options.backoffJitter >= 1.0) {
    throw std::invalid_argument("grpc::Channel: bad backoff options");
  }
  if (options.maxReceiveMessageBytes == 0 || options.maxSendMessageBytes == 0 ||
      options.writeHighWater == 0) {
    throw std::invalid_argument("grpc::Channel: message bounds and writeHighWater must be > 0");
  }
  if (options.keepaliveInterval < Duration::zero() ||
      options.keepaliveTimeout <= Duration::zero()) {
    throw std::invalid_argument("grpc::Channel: bad keepalive options");
  }
}

std::string authorityOf(const std::string& host, uint16_t port, const Channel::Options& options) {
  if (!options.serverNameOverride.empty()) return options.serverNameOverride;
  return InetAddress::joinHostPort(host, port);
}

}  // namespace

std::shared_ptr<Channel> Channel::create(EventLoop* loop, std::string_view target,
                                         Options options) {
  if (loop == nullptr) throw std::invalid_argument("grpc::Channel: no loop");
  checkOptions(options);
  Target parsed = parseTarget(target);
  // The last owner may let go on any thread: the connection and the
  // resolver are the loop's, so the channel is destroyed there.
  Channel* channel = new Channel(loop, std::move(parsed.host), parsed.port, std::move(options));
  return std::shared_ptr<Channel>(channel, [loop](Channel* doomed) {
    if (loop->isInLoopThread()) {
      delete doomed;
    } else {
      loop->queueInLoop([doomed] { delete doomed; });
    }
  });
}

Channel::Channel(EventLoop* loop, std::string host, uint16_t port, Options options)
    : loop_(loop),
      host_(std::move(host)),
      port_(port),
      options_(std::move(options)),
      authority_(authorityOf(host_, port_, options_)),
      backoff_(options_.initialBackoff) {}

Channel::~Channel() {
  // On the loop (create()'s deleter). The calls hold the channel, so no
  // stream is open: the connections close as they are destroyed.
  if (retryTimer_.valid()) loop_->cancel(retryTimer_);
  query_.reset();
}

void Channel::setStateCallback(StateCallback cb) {
  std::lock_guard<std::mutex> lock(callbackMutex_);
  stateCallback_ = std::move(cb);
}

void Channel::setState(State state) {
  if (state_.exchange(state, std::memory_order_acq_rel) == state) return;
  StateCallback cb;
  {
    std::lock_guard<std::mutex> lock(callbackMutex_);
    cb = stateCallback_;
  }
  if (cb) cb(state);
}

void Channel::connect() {
  loop_->runInLoop([self = shared_from_this()] {
    if (self->state() == State::kIdle) self->connectInLoop();
  });
}

void Channel::shutdown() {
  loop_->runInLoop([self = shared_from_this()] { self->shutdownInLoop(); });
}

void Channel::shutdownInLoop() {
  if (state() == State::kShutdown) return;
  setState(State::kShutdown);
  if (retryTimer_.valid()) loop_->cancel(retryTimer_);
  retryTimer_ = TimerId();
  query_.reset();
  failWaiting(true, "channel shut down");
  dropConnection();
  for (const auto& conn : retiring_) conn->close();
}

void Channel::startCall(const std::shared_ptr<ClientCall>& call) {
  loop_->assertInLoopThread();
  switch (state()) {
    case State::kShutdown:
      call->fail(Status(StatusCode::kUnavailable, "channel shut down"));
      return;
    case State::kReady:
      call->attach(conn_);
      return;
    case State::kTransientFailure:
      if (!call->waitForReady()) {
        call->fail(Status(StatusCode::kUnavailable, lastFailure_));
        return;
      }
      break;
    case State::kIdle:
      connectInLoop();
      break;
    case State::kConnecting:
      break;
  }
  waiting_.push_back(call);
}

void Channel::forgetCall(const ClientCall* call) {
  std::erase_if(waiting_, [call](const auto& waiting) { return waiting.get() == call; });
}

void Channel::connectInLoop() {
  setState(State::kConnecting);
  if (const auto address = InetAddress::parse(host_, port_)) {
    addresses_ = {*address};
    tryAddress(0);
    return;
  }
  NameResolver* resolver = options_.resolver;
  if (resolver == nullptr) {
    if (!ownResolver_) ownResolver_ = std::make_unique<dns::Resolver>(loop_);
    resolver = ownResolver_.get();
  }
  const std::weak_ptr<Channel> weak = weak_from_this();
  query_ = resolver->lookup(host_, port_, NameResolver::Family::kAny, [weak](ResolveResult r) {
    if (const auto self = weak.lock()) self->onResolved(std::move(r));
  });
}

void Channel::onResolved(ResolveResult result) {
  query_.reset();
  if (!result.ok() || result.addresses.empty()) {
    attemptFailed("name resolution failed: " +
                  (result.ok() ? host_ + ": no address" : result.error.message));
    return;
  }
  addresses_ = std::move(result.addresses);
  tryAddress(0);
}

void Channel::tryAddress(size_t index) {
  http2::ClientConnection::Options options;
  if (options_.tls) {
    const std::string peer =
        options_.serverNameOverride.empty() ? host_ : options_.serverNameOverride;
    options.layer = tls::newLayer(options_.tls, peer);
  }
  options.connectTimeout = std::max(options_.minConnectTimeout, backoff_);
  options.keepaliveInterval = options_.keepaliveInterval;
  options.keepaliveTimeout = options_.keepaliveTimeout;
  options.session = options_.session;
  auto conn = http2::ClientConnection::create(loop_, SocketAddress(addresses_[index]),
                                              "grpc " + authority_, options);
  const std::weak_ptr<Channel> weak = weak_from_this();
  const std::weak_ptr<http2::ClientConnection> weakConn = conn;
  conn->setStateCallback(
      [weak, weakConn, index](http2::ClientConnection::State state, std::string_view reason) {
        const auto self = weak.lock();
        const auto conn = weakConn.lock();
        if (!self || !conn) return;
        if (state == http2::ClientConnection::State::kConnected) {
          self->onConnectionState(conn, true, reason);
        } else if (state == http2::ClientConnection::State::kClosed) {
          // Not destroyed inside its own callback: from the loop's queue.
          self->loop_->queueInLoop([self, conn, index, why = std::string(reason)] {
            if (conn == self->conn_ && self->state() == State::kConnecting &&
                index + 1 < self->addresses_.size()) {
              self->conn_.reset();
              self->tryAddress(index + 1);
              return;
            }
            self->onConnectionState(conn, false, why);
          });
        }
      });
  conn_ = conn;
  conn->connect();
}

void Channel::onConnectionState(const std::shared_ptr<http2::ClientConnection>& conn, bool up,
                                std::string_view reason) {
  if (conn != conn_) {
    // A retiring connection that has closed.
    if (!up) std::erase(retiring_, conn);
    return;
  }
  if (up) {
    ++connectionsMade_;
    backoff_ = options_.initialBackoff;
    setState(State::kReady);
    std::deque<std::shared_ptr<ClientCall>> calls;
    calls.swap(waiting_);
    for (const auto& call : calls) {
      if (!call->finished()) call->attach(conn_);
    }
    return;
  }
  conn_.reset();
  if (state() == State::kShutdown) return;
  if (state() == State::kReady) {
    // Lost after it was up: idle until a call wants it again.
    LOG_DEBUG << "grpc " << authority_ << ": connection lost: " << reason;
    setState(State::kIdle);
    if (!waiting_.empty()) connectInLoop();
    return;
  }
  attemptFailed(std::string(reason));
}

void Channel::attemptFailed(std::string reason) {
  lastFailure_ = "failed to connect to " + authority_ + ": " + reason;
  LOG_DEBUG << "grpc: " << lastFailure_;
  setState(State::kTransientFailure);
  failWaiting(false, lastFailure_);
  const Duration delay = nextBackoff();
  retryTimer_ = loop_->runAfter(delay, [weak = weak_from_this()] {
    const auto self = weak.lock();
    if (!self) return;
    self->retryTimer_ = TimerId();
    if (self->state() == State::kTransientFailure) self->connectInLoop();
  });
}

Duration Channel::nextBackoff() {
  // gRPC's connection-backoff.md: the current backoff randomised by
  // +-jitter, then the next one grows by the multiplier, up to the cap.
  thread_local std::mt19937_64 random{std::random_device{}()};
  std::uniform_real_distribution<double> spread(1.0 - options_.backoffJitter,
                                                1.0 + options_.backoffJitter);
  const auto delay = std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::nano>(
      static_cast<double>(backoff_.count()) * spread(random)));
  const double next = static_cast<double>(backoff_.count()) * options_.backoffMultiplier;
  backoff_ = next >= static_cast<double>(options_.maxBackoff.count())
                 ? options_.maxBackoff
                 : Duration(static_cast<Duration::rep>(next));
  return delay;
}

void Channel::failWaiting(bool all, const std::string& why) {
  std::deque<std::shared_ptr<ClientCall>> keep;
  std::deque<std::shared_ptr<ClientCall>> calls;
  calls.swap(waiting_);
  for (const auto& call : calls) {
    if (!all && call->waitForReady()) {
      keep.push_back(call);
    } else {
      call->fail(Status(StatusCode::kUnavailable, why));
    }
  }
  // A failing call may have queued another meanwhile.
  for (auto& call : waiting_) keep.push_back(std::move(call));
  waiting_ = std::move(keep);
}

void Channel::connectionRefusing(const http2::ClientConnection* conn) {
  if (conn_.get() != conn || state() != State::kReady) return;
  dropConnection();
  setState(State::kIdle);
}

void Channel::dropConnection() {
  if (!conn_) return;
  // Kept until it closes by itself, so that its streams end as the server
  // ends them.
  if (conn_->state() != http2::ClientConnection::State::kClosed) {
    retiring_.push_back(conn_);
    conn_->goAway();
  }
  conn_.reset();
}

}  // namespace libnet::grpc
