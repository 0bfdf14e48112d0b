// HappyEyeballs: one connect to host:port by name, raced over IPv6 and IPv4
// as RFC 8305 ("Happy Eyeballs Version 2") describes:
//
//  - the AAAA and the A lookup start at once; an AAAA answer starts the
//    attempts, an A answer that comes first waits `resolutionDelay` (50 ms)
//    for the AAAA one;
//  - addresses are tried alternating by family, IPv6 first ("First Address
//    Family Count" 1), each family in the resolver's order; addresses that
//    arrive while attempts are under way join the race;
//  - a new non-blocking connect starts every `attemptDelay` (250 ms) while
//    the earlier ones are still pending, and at once when one fails;
//  - the first connected socket wins: every other attempt is closed and the
//    lookups still pending are cancelled;
//  - if everything fails, a ConnectFailure holds each lookup's error and
//    each attempt's address and errno.
//
// A numeric host (an IPv4 or IPv6 literal) needs no lookup and no resolver.
// One object makes one connect; to try again, make another (it looks the name
// up again).
//
// Held by std::shared_ptr (create()); its owner may drop it at any time,
// also from inside its callbacks, which is stop() plus freeing it. Loop
// thread only; the callbacks run on the loop, never inside start().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/Duration.h"
#include "base/UniqueFd.h"
#include "net/ConnectFailure.h"
#include "net/InetAddress.h"
#include "net/NameResolver.h"
#include "net/TimerId.h"

namespace libnet {

class ConnectAttempt;
class EventLoop;

class HappyEyeballs : public std::enable_shared_from_this<HappyEyeballs> {
 public:
  static constexpr Duration kResolutionDelay = std::chrono::milliseconds(50);
  static constexpr Duration kAttemptDelay = std::chrono::milliseconds(250);

  // What the race does, step by step, for tests and diagnostics.
  struct Event {
    enum class Kind : uint8_t {
      kResolved,        // a lookup answered (`family`; `error` is then 0)
      kAttemptStarted,  // a connect to `address` began (`trigger` says why now)
      kAttemptFailed,   // the connect to `address` failed with `error`
      kConnected,       // the connect to `address` won
    };
    enum class Trigger : uint8_t {
      kNone,
      kAnswer,           // a lookup answered while no attempt was due
      kResolutionDelay,  // the A answer waited long enough for AAAA
      kAttemptDelay,     // the previous attempt is still pending after the delay
      kPreviousFailed,   // the previous attempt failed
    };
    Kind kind;
    NameResolver::Family family = NameResolver::Family::kAny;
    InetAddress address = InetAddress();
    int error = 0;
    Trigger trigger = Trigger::kNone;
  };

  struct Request {
    // A host name, or a numeric IPv4 or IPv6 address (brackets allowed).
    std::string host;
    uint16_t port = 0;
    // Required unless `host` is numeric.
    std::shared_ptr<NameResolver> resolver{};
    // How long an A answer waits for the AAAA one (>= 0).
    Duration resolutionDelay = kResolutionDelay;
    // How long an attempt has before the next one starts beside it (> 0).
    Duration attemptDelay = kAttemptDelay;
    // Called at each step (see Event); may be empty.
    std::function<void(const Event&)> onEvent{};

    // "host:port", "192.0.2.1:80", "[2001:db8::1]:80" with `resolver`.
    // Throws std::invalid_argument for malformed text.
    [[nodiscard]] static Request parse(std::string_view hostPort,
                                       std::shared_ptr<NameResolver> resolver);
  };

  using ConnectedCallback = std::function<void(UniqueFd fd, const InetAddress& peer)>;
  using FailedCallback = std::function<void(const ConnectFailure& failure)>;

  // Throws std::invalid_argument, naming the host, for a host name without a
  // resolver, an invalid bracketed host or a bad delay.
  static void check(const Request& request);
  [[nodiscard]] static std::shared_ptr<HappyEyeballs> create(EventLoop* loop, Request request);
  ~HappyEyeballs();
  HappyEyeballs(const HappyEyeballs&) = delete;
  HappyEyeballs& operator=(const HappyEyeballs&) = delete;

  // Starts the race: exactly one of the callbacks runs later, unless stop()
  // comes first. Once only.
  void start(ConnectedCallback onConnected, FailedCallback onFailed);
  // Ends the race now: every socket it opened is closed, every lookup
  // cancelled, every timer cancelled; no callback runs afterwards.
  void stop();

  [[nodiscard]] const Request& request() const { return request_; }
  // Connect attempts made so far.
  [[nodiscard]] int attempts() const { return attemptsMade_; }

 private:
  struct Private {};
  // One family's lookup and the addresses of it not yet tried.
  struct Family {
    NameResolver::QueryPtr query;
    bool done = false;
    ResolveError error;
    std::vector<InetAddress> addresses;
    size_t next = 0;  // addresses[next...] are not tried yet
    [[nodiscard]] bool hasUntried() const { return next < addresses.size(); }
  };
  using Trigger = Event::Trigger;

 public:
  HappyEyeballs(Private, EventLoop* loop, Request request, std::optional<InetAddress> numeric);

 private:
  Family& family(NameResolver::Family which);
  void lookup(NameResolver::Family which);
  void resolved(NameResolver::Family which, ResolveResult result);
  void beginAttempts(Trigger trigger);
  void resolutionDelayPassed();
  void attemptDelayPassed();
  // Starts the next attempt if there is an address left; reports the
  // failure if nothing is left to wait for.
  void startNext(Trigger trigger);
  std::optional<InetAddress> nextAddress();
  void attemptDone(ConnectAttempt& attempt, int error);
  void failedAttempt(const ConnectAttempt& attempt, int error);
  void succeed(ConnectAttempt& attempt);
  void failIfExhausted();
  // Frees a query later: it may be the one whose callback is running.
  void retire(NameResolver::QueryPtr query);
  void releaseAll();
  void emit(Event event) const;
  TimerId after(Duration delay, void (HappyEyeballs::*step)());

  EventLoop* loop_;
  const Request request_;
  const std::optional<InetAddress> numeric_;
  Family ipv6_;
  Family ipv4_;
  bool started_ = false;
  bool running_ = false;        // started, and neither finished nor stopped
  bool attemptsBegun_ = false;  // the resolution delay is over
  bool lastWasIpv6_ = false;
  int attemptsMade_ = 0;
  std::vector<std::shared_ptr<ConnectAttempt>> pending_;
  TimerId resolutionTimer_;
  TimerId attemptTimer_;
  ConnectFailure failure_;
  ConnectedCallback onConnected_;
  FailedCallback onFailed_;
};

}  // namespace libnet
