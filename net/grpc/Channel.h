// grpc::Channel: the client's way to one gRPC server (a target), on one
// EventLoop: one http2::ClientConnection (h2c, or TLS with ALPN "h2") that
// every call of the channel shares, made when the first call needs it (or
// on connect()) and made again when it is lost or the server sends GOAWAY.
//
//   auto channel = grpc::Channel::create(&loop, "localhost:50051", {});
//   Greeter::Stub stub(channel);                   // generated (docs/grpc.md)
//
// Target: "host:port", "dns:///host:port", "[::1]:port" or an IPv4 literal
// with its port. A name is resolved through libnet's dns::Resolver on the
// channel's loop (Options::resolver, or one the channel makes); the
// addresses are tried in the order the resolver gives them.
//
// Connecting follows gRPC's connection backoff (doc/connection-backoff.md of
// the gRPC project): each attempt may take max(minConnectTimeout, the
// current backoff); after a failed round over the addresses the channel is
// kTransientFailure and tries again after the backoff (initialBackoff, times
// multiplier per failure, at most maxBackoff, each randomised by +-jitter).
// A call started while the channel is not ready waits for it (until its
// deadline); when an attempt fails, the calls waiting fail UNAVAILABLE,
// except those with waitForReady, which wait for a later attempt. A call
// whose stream the server refused (a GOAWAY, REFUSED_STREAM) before it
// processed anything is started again on a new connection, once.
//
// Threads: create(), calls, connect(), shutdown(), state() and the state
// callback's registration from any thread; the work is carried to the loop,
// where every callback runs. The channel lives as long as the shared_ptrs
// to it (the calls hold one); its last owner may drop it on any thread, and
// the connection is then closed on the loop (which must still be running
// or be destroyed afterwards).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/Duration.h"
#include "net/InetAddress.h"
#include "net/NameResolver.h"
#include "net/TimerId.h"
#include "net/http2/ClientSession.h"

namespace libnet {
class EventLoop;
}  // namespace libnet

namespace libnet::http2 {
class ClientConnection;
}  // namespace libnet::http2

namespace libnet::tls {
class Context;
}  // namespace libnet::tls

namespace libnet::grpc {

class ClientCall;

class Channel : public std::enable_shared_from_this<Channel> {
 public:
  // gRPC's connectivity states.
  enum class State : uint8_t { kIdle, kConnecting, kReady, kTransientFailure, kShutdown };

  struct Options {
    // TLS: a client context (tls::Context::newClient) whose alpn includes
    // "h2"; null: h2c (HTTP/2 with prior knowledge).
    std::shared_ptr<const tls::Context> tls{};
    // The name checked against the server's certificate and sent as SNI and
    // :authority; empty: the target's host.
    std::string serverNameOverride{};
    // Connection backoff (see the file comment); all > 0, multiplier >= 1,
    // 0 <= jitter < 1.
    Duration initialBackoff = std::chrono::seconds(1);
    double backoffMultiplier = 1.6;
    double backoffJitter = 0.2;
    Duration maxBackoff = std::chrono::seconds(120);
    Duration minConnectTimeout = std::chrono::seconds(20);
    // Keepalive PINGs: after this long without input from the server; zero
    // (the default, as gRPC's): none. The ACK must come within
    // keepaliveTimeout or the connection is closed.
    Duration keepaliveInterval = Duration::zero();
    Duration keepaliveTimeout = std::chrono::seconds(20);
    // A response message (as sent, or decompressed) longer than this ends
    // its call RESOURCE_EXHAUSTED (gRPC's default, 4 MiB).
    size_t maxReceiveMessageBytes = 4 * 1024 * 1024;
    // A request message longer than this is not sent: RESOURCE_EXHAUSTED.
    size_t maxSendMessageBytes = 4 * 1024 * 1024;
    // A call's write() returns false once this much of its output is queued.
    size_t writeHighWater = 256 * 1024;
    // Streams, windows, header limits, flood defences of the connection.
    http2::ClientSession::Options session{};
    // Resolves the target's host name; null: the channel makes a
    // dns::Resolver on its loop when a name (not an address) needs it.
    // Must outlive the channel and live on its loop.
    NameResolver* resolver = nullptr;
    std::string userAgent = "grpc-c++-libnet";
  };

  using StateCallback = std::function<void(State state)>;

  // Throws std::invalid_argument for a target it cannot parse or a bad
  // option. Any thread.
  [[nodiscard]] static std::shared_ptr<Channel> create(EventLoop* loop, std::string_view target,
                                                       Options options);
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Any thread.
  [[nodiscard]] State state() const { return state_.load(std::memory_order_acquire); }
  // Runs on the loop at each change of state (after it). Any thread.
  void setStateCallback(StateCallback cb);
  // Starts connecting now if idle (a call does it by itself).
  void connect();
  // Fails every call (UNAVAILABLE: "channel shut down"), closes the
  // connection; the channel stays kShutdown.
  void shutdown();

  [[nodiscard]] EventLoop* loop() const { return loop_; }
  [[nodiscard]] const Options& options() const { return options_; }
  // The :authority of every call.
  [[nodiscard]] const std::string& authority() const { return authority_; }
  [[nodiscard]] bool tls() const { return options_.tls != nullptr; }
  // Connections made so far (attempts that came up), for tests and stats.
  [[nodiscard]] uint64_t connectionsMade() const { return connectionsMade_.load(); }

  // ClientCall's side, loop thread: a call that wants a stream. Starts it
  // at once when ready, else queues it; ClientCall::attach() gets the
  // connection or the call fails.
  void startCall(const std::shared_ptr<ClientCall>& call);
  // A call that no longer waits (finished, cancelled).
  void forgetCall(const ClientCall* call);
  // The connection `conn` refused a call's stream before the server saw it:
  // the connection is going away (do not start calls on it).
  void connectionRefusing(const http2::ClientConnection* conn);

 private:
  Channel(EventLoop* loop, std::string host, uint16_t port, Options options);
  void setState(State state);
  void connectInLoop();
  void onResolved(ResolveResult result);
  void tryAddress(size_t index);
  void onConnectionState(const std::shared_ptr<http2::ClientConnection>& conn, bool up,
                         std::string_view reason);
  void attemptFailed(std::string reason);
  void dropConnection();
  [[nodiscard]] Duration nextBackoff();
  void failWaiting(bool all, const std::string& why);
  void shutdownInLoop();

  EventLoop* const loop_;
  const std::string host_;
  const uint16_t port_;
  const Options options_;
  const std::string authority_;
  std::atomic<State> state_{State::kIdle};
  std::atomic<uint64_t> connectionsMade_{0};
  std::mutex callbackMutex_;
  StateCallback stateCallback_;  // guarded by callbackMutex_

  // Loop thread from here on.
  std::unique_ptr<NameResolver> ownResolver_;
  NameResolver::QueryPtr query_;
  std::vector<InetAddress> addresses_;
  std::shared_ptr<http2::ClientConnection> conn_;  // up, or connecting
  // Connections going away (GOAWAY, lost) kept until their streams end.
  std::vector<std::shared_ptr<http2::ClientConnection>> retiring_;
  std::deque<std::shared_ptr<ClientCall>> waiting_;
  TimerId retryTimer_;
  Duration backoff_{};
  std::string lastFailure_;
};

}  // namespace libnet::grpc
