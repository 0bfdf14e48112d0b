#include "net/HappyEyeballs.h"

#include <stdexcept>

#include "base/Logging.h"
#include "net/ConnectAttempt.h"
#include "net/EventLoop.h"

namespace libnet {

namespace {

std::string describe(const HappyEyeballs::Request& request) {
  return "connect to " + InetAddress::joinHostPort(request.host, request.port);
}

}  // namespace

HappyEyeballs::Request HappyEyeballs::Request::parse(std::string_view hostPort,
                                                     std::shared_ptr<NameResolver> resolver) {
  const auto split = InetAddress::splitHostPort(hostPort);
  if (!split || split->first.empty()) {
    throw std::invalid_argument("not host:port: '" + std::string(hostPort) + "'");
  }
  Request request;
  request.host = std::string(split->first);
  request.port = split->second;
  request.resolver = std::move(resolver);
  return request;
}

void HappyEyeballs::check(const Request& request) {
  if (request.host.empty()) throw std::invalid_argument(describe(request) + ": no host");
  if (request.attemptDelay <= Duration::zero()) {
    throw std::invalid_argument(describe(request) + ": the attempt delay must be positive");
  }
  if (request.resolutionDelay < Duration::zero()) {
    throw std::invalid_argument(describe(request) + ": the resolution delay is negative");
  }
  if (InetAddress::parse(request.host, request.port)) return;
  if (request.host.front() == '[') {
    throw std::invalid_argument(describe(request) + ": not an IPv6 address in brackets");
  }
  if (!request.resolver) {
    throw std::invalid_argument(describe(request) + ": " + request.host +
                                " is a host name, and no resolver was given to look it up");
  }
}

std::shared_ptr<HappyEyeballs> HappyEyeballs::create(EventLoop* loop, Request request) {
  check(request);
  auto numeric = InetAddress::parse(request.host, request.port);
  return std::make_shared<HappyEyeballs>(Private{}, loop, std::move(request), numeric);
}

HappyEyeballs::HappyEyeballs(Private, EventLoop* loop, Request request,
                             std::optional<InetAddress> numeric)
    : loop_(loop), request_(std::move(request)), numeric_(numeric) {
  failure_.host = request_.host;
  failure_.port = request_.port;
}

HappyEyeballs::~HappyEyeballs() { releaseAll(); }

void HappyEyeballs::start(ConnectedCallback onConnected, FailedCallback onFailed) {
  loop_->assertInLoopThread();
  if (started_) throw std::logic_error(describe(request_) + ": HappyEyeballs started twice");
  started_ = true;
  running_ = true;
  onConnected_ = std::move(onConnected);
  onFailed_ = std::move(onFailed);
  if (numeric_) {
    ipv6_.done = true;
    ipv4_.done = true;
    (numeric_->family() == AF_INET6 ? ipv6_ : ipv4_).addresses.push_back(*numeric_);
    attemptsBegun_ = true;
    // Never from inside start(): the first attempt may fail at once.
    loop_->queueInLoop([weak = weak_from_this()] {
      if (auto self = weak.lock()) self->startNext(Trigger::kAnswer);
    });
    return;
  }
  // AAAA first, as RFC 8305 asks, and A right after it without waiting.
  lookup(NameResolver::Family::kIPv6);
  lookup(NameResolver::Family::kIPv4);
}

void HappyEyeballs::stop() {
  loop_->assertInLoopThread();
  releaseAll();
}

HappyEyeballs::Family& HappyEyeballs::family(NameResolver::Family which) {
  return which == NameResolver::Family::kIPv6 ? ipv6_ : ipv4_;
}

void HappyEyeballs::lookup(NameResolver::Family which) {
  family(which).query = request_.resolver->lookup(
      request_.host, request_.port, which, [weak = weak_from_this(), which](ResolveResult result) {
        if (auto self = weak.lock()) self->resolved(which, std::move(result));
      });
}

void HappyEyeballs::resolved(NameResolver::Family which, ResolveResult result) {
  if (!running_) return;
  Family& answered = family(which);
  answered.done = true;
  // Not freed inside its own callback: the resolver may still be using it.
  retire(std::move(answered.query));
  (which == NameResolver::Family::kIPv6 ? failure_.ipv6 : failure_.ipv4) = result.error;
  for (const InetAddress& address : result.addresses) {
    (address.family() == AF_INET6 ? ipv6_ : ipv4_).addresses.push_back(address);
  }
  emit({.kind = Event::Kind::kResolved, .family = which});
  if (!running_) return;
  if (attemptsBegun_) {
    // New addresses join the race now if no attempt is within its delay.
    if (!attemptTimer_.valid()) startNext(Trigger::kAnswer);
    return;
  }
  if (which == NameResolver::Family::kIPv6) {
    // AAAA with addresses goes at once; without, A (if still out) decides.
    if (ipv6_.hasUntried() || ipv4_.done) beginAttempts(Trigger::kAnswer);
  } else if (ipv6_.done) {
    beginAttempts(Trigger::kAnswer);
  } else if (ipv4_.hasUntried()) {
    // RFC 8305 section 3: an A answer waits a little for the AAAA one.
    resolutionTimer_ = after(request_.resolutionDelay, &HappyEyeballs::resolutionDelayPassed);
  }
}

void HappyEyeballs::beginAttempts(Trigger trigger) {
  attemptsBegun_ = true;
  loop_->cancel(resolutionTimer_);
  resolutionTimer_ = TimerId();
  startNext(trigger);
}

void HappyEyeballs::resolutionDelayPassed() {
  resolutionTimer_ = TimerId();
  if (running_ && !attemptsBegun_) beginAttempts(Trigger::kResolutionDelay);
}

void HappyEyeballs::attemptDelayPassed() {
  attemptTimer_ = TimerId();
  if (running_) startNext(Trigger::kAttemptDelay);
}

void HappyEyeballs::startNext(Trigger trigger) {
  // Attempts that fail inside connect() (no route, say) are followed at
  // once by the next address, in this loop rather than by recursion.
  while (running_) {
    const std::optional<InetAddress> address = nextAddress();
    if (!address) {
      failIfExhausted();
      return;
    }
    // The next attempt's delay counts from this one.
    loop_->cancel(attemptTimer_);
    attemptTimer_ = TimerId();
    ++attemptsMade_;
    auto attempt = ConnectAttempt::start(
        loop_, *address, [weak = weak_from_this()](ConnectAttempt& done, int error) {
          if (auto self = weak.lock()) self->attemptDone(done, error);
        });
    emit({.kind = Event::Kind::kAttemptStarted, .address = *address, .trigger = trigger});
    if (!running_) return;  // stopped from onEvent: the attempt closes here
    if (attempt->error() == 0) {
      pending_.push_back(std::move(attempt));
      attemptTimer_ = after(request_.attemptDelay, &HappyEyeballs::attemptDelayPassed);
      return;
    }
    failedAttempt(*attempt, attempt->error());
    trigger = Trigger::kPreviousFailed;
  }
}

std::optional<InetAddress> HappyEyeballs::nextAddress() {
  // Alternate the families, IPv6 first; one that has run out leaves the
  // other to go on alone.
  Family* first = lastWasIpv6_ ? &ipv4_ : &ipv6_;
  Family* second = lastWasIpv6_ ? &ipv6_ : &ipv4_;
  for (Family* f : {first, second}) {
    if (f->hasUntried()) {
      lastWasIpv6_ = f == &ipv6_;
      return f->addresses[f->next++];
    }
  }
  return std::nullopt;
}

void HappyEyeballs::attemptDone(ConnectAttempt& attempt, int error) {
  if (!running_) return;
  std::erase_if(pending_, [&](const auto& p) { return p.get() == &attempt; });
  if (error == 0) {
    succeed(attempt);
    return;
  }
  failedAttempt(attempt, error);
  if (running_) startNext(Trigger::kPreviousFailed);
}

void HappyEyeballs::failedAttempt(const ConnectAttempt& attempt, int error) {
  failure_.attempts.push_back({attempt.address(), error, attempt.permanent()});
  emit({.kind = Event::Kind::kAttemptFailed, .address = attempt.address(), .error = error});
}

void HappyEyeballs::succeed(ConnectAttempt& attempt) {
  UniqueFd fd = attempt.takeFd();
  const InetAddress peer = attempt.address();
  emit({.kind = Event::Kind::kConnected, .address = peer});
  ConnectedCallback onConnected = std::move(onConnected_);
  releaseAll();
  LOG_DEBUG << describe(request_) << ": connected to " << peer.toIpPort() << " after "
            << attemptsMade_ << " attempt(s)";
  if (onConnected) onConnected(std::move(fd), peer);
}

void HappyEyeballs::failIfExhausted() {
  if (!pending_.empty() || !ipv6_.done || !ipv4_.done) return;
  FailedCallback onFailed = std::move(onFailed_);
  ConnectFailure failure = std::move(failure_);
  releaseAll();
  LOG_DEBUG << failure.message();
  if (onFailed) onFailed(failure);
}

void HappyEyeballs::retire(NameResolver::QueryPtr query) {
  if (!query) return;
  loop_->queueInLoop([query = std::shared_ptr<NameResolver::Query>(std::move(query))] {});
}

void HappyEyeballs::releaseAll() {
  running_ = false;
  loop_->cancel(resolutionTimer_);
  loop_->cancel(attemptTimer_);
  resolutionTimer_ = TimerId();
  attemptTimer_ = TimerId();
  for (Family* f : {&ipv6_, &ipv4_}) {
    if (f->query) f->query->cancel();
    retire(std::move(f->query));
  }
  for (const auto& attempt : pending_) attempt->cancel();
  pending_.clear();
  onConnected_ = nullptr;
  onFailed_ = nullptr;
}

void HappyEyeballs::emit(Event event) const {
  if (request_.onEvent) request_.onEvent(event);
}

TimerId HappyEyeballs::after(Duration delay, void (HappyEyeballs::*step)()) {
  return loop_->runAfter(delay, [weak = weak_from_this(), step] {
    if (auto self = weak.lock()) ((*self).*step)();
  });
}

}  // namespace libnet
