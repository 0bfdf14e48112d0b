// ws_load: the one WebSocket load client of bench/websocket/run_ws_bench.py,
// used against every server it measures (libnet's ws_echo_server on both
// backends, Boost.Beast's echo server). Written on raw epoll, OpenSSL's SHA-1
// and zlib, so that no server under test shares code with the client, and
// kept light on CPU: it runs on the same two-core machine as the server.
//
// Every connection does the opening handshake (the 101 and its accept key
// checked), then request/response: one masked message (binary, or text with
// --text), wait for the whole echo, send the next. The frame is built once
// and resent (compressed once with --deflate). After --warmup seconds it
// prints "window: start", counts the echoes of the next -d seconds, prints
// "window: end", waits for the echoes in flight, closes every connection with
// a close frame, and prints
//
//   messages: N  seconds: S  messages/s: R
//   latency_us: p50 A  p99 B
//   errors: E
//
// It exits 1 when a connection failed or an echo did not match (--verify
// compares every echo byte for byte, inflating compressed ones), 2 for a bad
// command line.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/websocket/FrameReader.h"
#include "bench/websocket/WsClientProtocol.h"
#include "bench/websocket/WsLoadArgs.h"

namespace wsload {
namespace {

using Clock = std::chrono::steady_clock;

// How long a connection may take for its handshake, and the load for the
// echoes in flight at the end of the window, before they count as failures.
constexpr int kHandshakeTimeoutS = 5;
constexpr auto kDrainLimit = std::chrono::seconds(5);
constexpr auto kCloseLimit = std::chrono::seconds(1);
constexpr size_t kReadBuffer = 256 * 1024;

enum class Phase { kWarmup, kWindow, kDrain, kClosing };

class Loader;

// One WebSocket connection; owned by the Loader, which owns its fd.
class Connection : public FrameSink {
 public:
  Connection(Loader& loader, int fd, bool keepPayload)
      : loader_(loader), fd_(fd), reader_(keepPayload) {}
  ~Connection() override {
    if (fd_ >= 0) ::close(fd_);
  }

  bool onMessage(int opcode, bool compressed, uint64_t wireBytes,
                 const std::string& payload) override;
  bool onControl(int opcode, const std::string& payload) override;

  Loader& loader_;
  int fd_;
  FrameReader reader_;
  Clock::time_point sentAt_;
  size_t sendOffset_ = 0;
  bool wantWrite_ = false;
  bool inFlight_ = false;
  bool closing_ = false;
};

class Loader {
 public:
  explicit Loader(const WsLoadArgs& args);
  ~Loader() {
    if (epoll_ >= 0) ::close(epoll_);
  }
  int run();

  bool messageDone(Connection& c, int opcode, bool compressed, uint64_t wireBytes,
                   const std::string& payload);
  bool sendControl(Connection& c, int opcode, const std::string& payload);

 private:
  void connectAll();
  std::string handshake(int fd, std::string* extra);
  void startMessage(Connection& c);
  bool flush(Connection& c);
  bool echoMatches(int opcode, bool compressed, uint64_t wireBytes, const std::string& payload);
  void handleEvent(Connection& c, uint32_t events);
  void fail(Connection& c, const std::string& why);
  void setInterest(Connection& c, bool wantWrite);
  void loop();
  bool advancePhase();
  void beginClose();
  int report() const;

  const WsLoadArgs& args_;
  const std::string payload_;
  std::string wire_;  // the payload as sent: compressed with --deflate
  std::string frame_;
  Inflater inflater_;
  std::string inflated_;
  int epoll_ = -1;
  std::vector<std::unique_ptr<Connection>> conns_;
  size_t open_ = 0;
  size_t inFlight_ = 0;
  Phase phase_ = Phase::kWarmup;
  Clock::time_point phaseEnd_;
  Clock::time_point windowStart_;
  Clock::time_point windowEnd_;
  uint64_t messages_ = 0;
  uint64_t errors_ = 0;
  std::vector<uint32_t> latenciesNs_;
  std::vector<char> readBuffer_ = std::vector<char>(kReadBuffer);
};

bool Connection::onMessage(int opcode, bool compressed, uint64_t wireBytes,
                           const std::string& payload) {
  return loader_.messageDone(*this, opcode, compressed, wireBytes, payload);
}

bool Connection::onControl(int opcode, const std::string& payload) {
  if (opcode == kOpPing) return loader_.sendControl(*this, kOpPong, payload);
  if (opcode == kOpClose) {
    std::fprintf(stderr, "ws_load: the server closed a connection\n");
    return false;
  }
  return true;
}

Loader::Loader(const WsLoadArgs& args) : args_(args), payload_(makePayload(args.size)) {
  wire_ = args.deflate ? deflateMessage(payload_) : payload_;
  frame_ = maskedFrame(args.text ? kOpText : kOpBinary, args.deflate, wire_);
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + strerror(errno));
}

void raiseFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int connectTo(const WsLoadArgs& args, std::string* error) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + strerror(errno);
    return -1;
  }
  // Blocking, with timeouts, for the handshake only.
  timeval timeout{.tv_sec = kHandshakeTimeoutS, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(args.port);
  ::inet_pton(AF_INET, args.host.c_str(), &addr.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *error = std::string("connect: ") + strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string Loader::handshake(int fd, std::string* extra) {
  const std::string key = makeKey();
  const std::string request = upgradeRequest(args_.host, args_.port, key, args_.deflate);
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return std::string("sending the upgrade request: ") + strerror(errno);
  }
  std::string response;
  size_t end;
  while ((end = response.find("\r\n\r\n")) == std::string::npos) {
    if (response.size() > 16384) return "upgrade response head over 16 KiB";
    const ssize_t n = ::recv(fd, readBuffer_.data(), readBuffer_.size(), 0);
    if (n <= 0) {
      return n == 0 ? "the server closed during the handshake"
                    : std::string("reading the upgrade response: ") + strerror(errno);
    }
    response.append(readBuffer_.data(), static_cast<size_t>(n));
  }
  *extra = response.substr(end + 4);
  return checkUpgradeResponse(std::string_view(response).substr(0, end + 4), key, args_.deflate);
}

void Loader::connectAll() {
  conns_.reserve(static_cast<size_t>(args_.conns));
  for (int i = 0; i < args_.conns; ++i) {
    std::string error, extra;
    const int fd = connectTo(args_, &error);
    if (fd >= 0) error = handshake(fd, &extra);
    if (!error.empty() || !extra.empty()) {
      if (error.empty()) error = "data before the first message";
      std::fprintf(stderr, "ws_load: connection %d: %s\n", i + 1, error.c_str());
      if (fd >= 0) ::close(fd);
      ++errors_;
      continue;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    conns_.push_back(std::make_unique<Connection>(*this, fd, args_.verify));
    epoll_event event{.events = EPOLLIN, .data = {.ptr = conns_.back().get()}};
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) != 0) {
      throw std::runtime_error(std::string("epoll_ctl: ") + strerror(errno));
    }
    ++open_;
  }
}

void Loader::setInterest(Connection& c, bool wantWrite) {
  if (c.wantWrite_ == wantWrite) return;
  c.wantWrite_ = wantWrite;
  epoll_event event{.events = EPOLLIN | (wantWrite ? EPOLLOUT : 0u), .data = {.ptr = &c}};
  ::epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd_, &event);
}

// Sends what is left of the frame; false if the connection failed.
bool Loader::flush(Connection& c) {
  while (c.sendOffset_ < frame_.size()) {
    const ssize_t n =
        ::send(c.fd_, frame_.data() + c.sendOffset_, frame_.size() - c.sendOffset_, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      setInterest(c, true);
      return true;
    }
    if (n < 0) {
      fail(c, std::string("send: ") + strerror(errno));
      return false;
    }
    c.sendOffset_ += static_cast<size_t>(n);
  }
  setInterest(c, false);
  return true;
}

void Loader::startMessage(Connection& c) {
  c.sentAt_ = Clock::now();
  c.sendOffset_ = 0;
  c.inFlight_ = true;
  ++inFlight_;
  flush(c);
}

bool Loader::sendControl(Connection& c, int opcode, const std::string& payload) {
  // Control frames are tiny and rare (a ping): sent whole or not at all,
  // never between the pieces of a partly sent message.
  const std::string frame = maskedFrame(opcode, false, payload);
  if (c.sendOffset_ < frame_.size() && c.inFlight_) return true;
  if (::send(c.fd_, frame.data(), frame.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(frame.size())) {
    fail(c, "cannot send a control frame");
    return false;
  }
  return true;
}

bool Loader::echoMatches(int opcode, bool compressed, uint64_t wireBytes,
                         const std::string& payload) {
  if (opcode != (args_.text ? kOpText : kOpBinary)) return false;
  if (compressed && !args_.deflate) return false;
  if (!args_.verify) return compressed || wireBytes == payload_.size();
  if (!compressed) return payload == payload_;
  return inflater_.inflate(payload, payload_.size(), &inflated_) && inflated_ == payload_;
}

bool Loader::messageDone(Connection& c, int opcode, bool compressed, uint64_t wireBytes,
                         const std::string& payload) {
  if (!c.inFlight_ || c.sendOffset_ < frame_.size()) {
    fail(c, "an echo before its message was sent");
    return false;
  }
  if (!echoMatches(opcode, compressed, wireBytes, payload)) {
    fail(c, "the echo does not match the message");
    return false;
  }
  const Clock::time_point now = Clock::now();
  c.inFlight_ = false;
  --inFlight_;
  if (phase_ == Phase::kWindow) {
    ++messages_;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.sentAt_);
    latenciesNs_.push_back(static_cast<uint32_t>(std::min<int64_t>(ns.count(), UINT32_MAX)));
  }
  if (phase_ == Phase::kWarmup || phase_ == Phase::kWindow) startMessage(c);
  return true;
}

void Loader::fail(Connection& c, const std::string& why) {
  if (c.fd_ < 0) return;
  std::fprintf(stderr, "ws_load: connection failed: %s\n", why.c_str());
  ++errors_;
  if (c.inFlight_) --inFlight_;
  c.inFlight_ = false;
  ::close(c.fd_);  // also takes it out of the epoll set
  c.fd_ = -1;
  --open_;
}

void Loader::handleEvent(Connection& c, uint32_t events) {
  if (c.fd_ < 0) return;
  if ((events & EPOLLOUT) != 0 && !flush(c)) return;
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0) return;
  const ssize_t n = ::recv(c.fd_, readBuffer_.data(), readBuffer_.size(), 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (c.closing_) {
    if (n > 0) return;  // whatever the server still sends, its close frame included
    ::close(c.fd_);
    c.fd_ = -1;
    --open_;
    return;
  }
  if (n <= 0) {
    fail(c, n == 0 ? "the server closed the connection" : std::string("recv: ") + strerror(errno));
    return;
  }
  if (!c.reader_.feed(reinterpret_cast<const uint8_t*>(readBuffer_.data()), static_cast<size_t>(n),
                      c)) {
    fail(c, c.reader_.error().empty() ? "closed" : "protocol error: " + c.reader_.error());
  }
}

// Moves to the next phase when its time has come or, draining, when no echo
// is in flight; false when the run is over.
bool Loader::advancePhase() {
  const Clock::time_point now = Clock::now();
  if (phase_ == Phase::kWarmup && now >= phaseEnd_) {
    phase_ = Phase::kWindow;
    windowStart_ = now;
    phaseEnd_ = now + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(args_.seconds));
    std::printf("window: start\n");
    std::fflush(stdout);
  } else if (phase_ == Phase::kWindow && now >= phaseEnd_) {
    phase_ = Phase::kDrain;
    windowEnd_ = now;
    phaseEnd_ = now + kDrainLimit;
    std::printf("window: end\n");
    std::fflush(stdout);
  } else if (phase_ == Phase::kDrain && (inFlight_ == 0 || now >= phaseEnd_)) {
    beginClose();
  } else if (phase_ == Phase::kClosing && (open_ == 0 || now >= phaseEnd_)) {
    return false;
  }
  return open_ > 0;
}

void Loader::beginClose() {
  if (inFlight_ > 0) {
    std::fprintf(stderr, "ws_load: %zu echoes still missing %lld s after the window\n", inFlight_,
                 static_cast<long long>(kDrainLimit.count()));
    errors_ += inFlight_;
  }
  phase_ = Phase::kClosing;
  phaseEnd_ = Clock::now() + kCloseLimit;
  const std::string code("\x03\xe8", 2);  // 1000, normal closure
  for (auto& c : conns_) {
    if (c->fd_ < 0) continue;
    if (!sendControl(*c, kOpClose, code)) continue;
    c->closing_ = true;
    ::shutdown(c->fd_, SHUT_WR);
  }
}

void Loader::loop() {
  std::vector<epoll_event> events(1024);
  while (advancePhase()) {
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(phaseEnd_ - Clock::now());
    const int timeout = static_cast<int>(std::clamp<int64_t>(wait.count(), 0, 1000));
    const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), timeout);
    if (n < 0 && errno != EINTR)
      throw std::runtime_error(std::string("epoll_wait: ") + strerror(errno));
    for (int i = 0; i < n; ++i) {
      handleEvent(*static_cast<Connection*>(events[i].data.ptr), events[i].events);
    }
  }
}

int Loader::run() {
  raiseFileLimit();
  connectAll();
  if (conns_.empty()) {
    std::fprintf(stderr, "ws_load: no connection could be made\n");
    return 1;
  }
  phaseEnd_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(args_.warmup));
  latenciesNs_.reserve(1 << 20);
  for (auto& c : conns_) startMessage(*c);
  loop();
  if (phase_ == Phase::kWarmup || phase_ == Phase::kWindow) {
    std::fprintf(stderr, "ws_load: every connection failed before the window ended\n");
    windowEnd_ = Clock::now();
    if (phase_ == Phase::kWarmup) windowStart_ = windowEnd_;
  }
  return report();
}

double percentileUs(std::vector<uint32_t>& ns, double p) {
  if (ns.empty()) return 0;
  const size_t k = std::min(ns.size() - 1, static_cast<size_t>(p * static_cast<double>(ns.size())));
  std::nth_element(ns.begin(), ns.begin() + static_cast<ptrdiff_t>(k), ns.end());
  return ns[k] / 1000.0;
}

int Loader::report() const {
  const double seconds = std::chrono::duration<double>(windowEnd_ - windowStart_).count();
  std::vector<uint32_t> ns = latenciesNs_;
  std::printf("messages: %llu  seconds: %.3f  messages/s: %.0f\n",
              static_cast<unsigned long long>(messages_), seconds,
              seconds > 0 ? static_cast<double>(messages_) / seconds : 0.0);
  const double p50 = percentileUs(ns, 0.50);
  const double p99 = percentileUs(ns, 0.99);
  std::printf("latency_us: p50 %.1f  p99 %.1f\n", p50, p99);
  std::printf("errors: %llu\n", static_cast<unsigned long long>(errors_));
  return errors_ == 0 && messages_ > 0 ? 0 : 1;
}

}  // namespace
}  // namespace wsload

int main(int argc, char** argv) {
  const wsload::WsLoadArgs args = wsload::parseWsLoadArgs(argc, argv);
  try {
    wsload::Loader loader(args);
    return loader.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ws_load: %s\n", e.what());
    return 1;
  }
}
