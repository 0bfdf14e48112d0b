// handover_bench: how evenly a TcpServer with I/O threads spreads
// connections whose lifetimes differ, and what that does to the latency of
// the short ones: kHandOver with HandOver::kRoundRobin, with
// HandOver::kLeastConnections, and kPerLoop (a SO_REUSEPORT socket per
// loop, the kernel's hash), interleaved, several runs, medians.
//
// The server echoes, on --loops I/O loops. One client thread (epoll, no
// libnet) opens --rate connections a second, at even intervals (open loop:
// a slow server does not slow the arrivals). Most are short: a connect, one
// 64-byte request, its echo and a close. Every --every-th connection opened
// is long instead (--pattern periodic: by its place in
// the sequence; random: with probability 1/every), and sends --long-bytes
// every --long-period-ms (after the previous echo is back) for
// --long-rounds round trips before it closes: a busy, long-lived client
// among many short ones, on a machine that is not saturated. Sampled every 10 ms: each loop's live
// connections (TcpServer::loopStats()). Reported per run and as medians over the runs: short
// connections done per second, their latency (connect to echo) p50 and p99, and the loops' live
// connections: the average of the fullest and of the emptiest loop, and the mean gap between them.
//
//   bazel run --config=opt //bench/handover:handover_bench -- --runs 3
//
// Prints one "run ..." line per run and a table of medians (stdout).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/Logging.h"
#include "examples/common/Flags.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"

namespace {

using libnet::TcpServer;
using Clock = std::chrono::steady_clock;

struct Settings {
  int loops = 2;
  int seconds = 3;
  int runs = 3;
  int rate = 2000;  // connections opened per second
  int every = 8;
  int longRounds = 100;
  int longBytes = 256;
  int longPeriodMs = 10;
  bool randomPattern = false;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
};

struct Policy {
  const char* name;
  TcpServer::AcceptMode mode;
  TcpServer::HandOver handOver;
};

constexpr std::array<Policy, 3> kPolicies{{
    {"round-robin", TcpServer::AcceptMode::kHandOver, TcpServer::HandOver::kRoundRobin},
    {"least-conns", TcpServer::AcceptMode::kHandOver, TcpServer::HandOver::kLeastConnections},
    {"per-loop", TcpServer::AcceptMode::kPerLoop, TcpServer::HandOver::kRoundRobin},
}};

struct Result {
  double shortPerSecond = 0;
  double p50us = 0;
  double p99us = 0;
  double fullestAvg = 0;  // live connections of the fullest loop, averaged over samples
  double emptiestAvg = 0;
  double meanGap = 0;  // mean over samples of (most - fewest) live connections
};

constexpr size_t kShortBytes = 64;
constexpr auto kSampleEvery = std::chrono::milliseconds(10);

// One client connection's state.
struct Conn {
  int fd = -1;
  bool isLong = false;
  bool connected = false;
  Clock::time_point start;
  size_t want = 0;  // bytes of echo still due this round
  int roundsLeft = 0;
  uint64_t id = 0;  // its place in the sequence (fds are reused)
};

// A long connection's next round, due at `due`.
struct Due {
  Clock::time_point due;
  int fd;
  uint64_t id;
};

class Client {
 public:
  Client(const Settings& s, uint16_t port, TcpServer* server)
      : s_(s), server_(server), rng_(12345) {
    addr_.sin_family = AF_INET;
    addr_.sin_port = htons(port);
    addr_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    message_.assign(std::max<size_t>(kShortBytes, static_cast<size_t>(s.longBytes)), 'x');
    scratch_.resize(64 * 1024);
  }
  ~Client() {
    for (auto& [fd, conn] : conns_) ::close(fd);
    ::close(epfd_);
  }

  Result run() {
    const auto begin = Clock::now();
    const auto interval =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / s_.rate));
    auto nextOpen = begin;
    const auto end = begin + std::chrono::seconds(s_.seconds);
    auto nextSample = begin;
    std::array<epoll_event, 256> events{};
    while (Clock::now() < end) {
      const int n = ::epoll_wait(epfd_, events.data(), static_cast<int>(events.size()), 1);
      for (int i = 0; i < n; ++i) onEvent(events[static_cast<size_t>(i)]);
      sendDueRounds();
      for (auto now = Clock::now(); nextOpen <= now; nextOpen += interval) openNext();
      if (Clock::now() >= nextSample) {
        sample();
        nextSample += kSampleEvery;
      }
    }
    return summarize(std::chrono::duration<double>(Clock::now() - begin).count());
  }

 private:
  void openNext() {
    ++opened_;
    const bool isLong = s_.randomPattern ? (rng_() % static_cast<unsigned>(s_.every) == 0)
                                         : (opened_ % static_cast<uint64_t>(s_.every) == 0);
    open(isLong);
  }

  void open(bool isLong) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    Conn conn;
    conn.fd = fd;
    conn.isLong = isLong;
    conn.start = Clock::now();
    conn.roundsLeft = isLong ? s_.longRounds : 1;
    conn.id = opened_;
    const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_);
    if (rc != 0 && errno != EINPROGRESS) {
      ++connectErrors_;
      ::close(fd);
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.fd = fd;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    conns_[fd] = conn;
  }

  size_t roundBytes(const Conn& c) const {
    return c.isLong ? static_cast<size_t>(s_.longBytes) : kShortBytes;
  }

  void sendRound(Conn& c) {
    c.want = roundBytes(c);
    // Small enough for an empty socket buffer: one send takes it all.
    (void)::send(c.fd, message_.data(), c.want, MSG_NOSIGNAL);
  }

  void onEvent(const epoll_event& ev) {
    auto it = conns_.find(ev.data.fd);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (!c.connected) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0 || (ev.events & (EPOLLERR | EPOLLHUP))) return finish(it, false);
      c.connected = true;
      epoll_event in{};
      in.events = EPOLLIN;
      in.data.fd = c.fd;
      ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &in);
      sendRound(c);
      return;
    }
    const ssize_t n = ::recv(c.fd, scratch_.data(), scratch_.size(), 0);
    if (n <= 0) return finish(it, false);
    c.want -= std::min(c.want, static_cast<size_t>(n));
    if (c.want > 0) return;
    if (--c.roundsLeft > 0) {
      // Every round has the same pause: the queue stays in due order.
      pending_.push_back({Clock::now() + std::chrono::milliseconds(s_.longPeriodMs), c.fd, c.id});
      return;
    }
    finish(it, true);
  }

  void sendDueRounds() {
    const Clock::time_point now = Clock::now();
    while (!pending_.empty() && pending_.front().due <= now) {
      const Due d = pending_.front();
      pending_.pop_front();
      auto it = conns_.find(d.fd);
      if (it != conns_.end() && it->second.id == d.id) sendRound(it->second);
    }
  }

  void finish(std::unordered_map<int, Conn>::iterator it, bool ok) {
    Conn c = it->second;
    conns_.erase(it);
    ::close(c.fd);
    if (!c.isLong) {
      if (ok) {
        latenciesUs_.push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - c.start).count());
      } else {
        ++failed_;
      }
    }
  }

  void sample() {
    const std::vector<TcpServer::LoopStats> stats = server_->loopStats();
    size_t most = 0;
    size_t fewest = SIZE_MAX;
    for (const TcpServer::LoopStats& st : stats) {
      most = std::max(most, st.connections);
      fewest = std::min(fewest, st.connections);
    }
    samples_.push_back({most, fewest});
  }

  Result summarize(double seconds) {
    Result r;
    r.shortPerSecond = static_cast<double>(latenciesUs_.size()) / seconds;
    std::sort(latenciesUs_.begin(), latenciesUs_.end());
    auto pct = [&](double p) {
      if (latenciesUs_.empty()) return 0.0;
      return latenciesUs_[std::min(
          latenciesUs_.size() - 1,
          static_cast<size_t>(p * static_cast<double>(latenciesUs_.size())))];
    };
    r.p50us = pct(0.50);
    r.p99us = pct(0.99);
    double most = 0;
    double fewest = 0;
    double gap = 0;
    for (const auto& [m, f] : samples_) {
      most += static_cast<double>(m);
      fewest += static_cast<double>(f);
      gap += static_cast<double>(m - f);
    }
    const double n = std::max<double>(1, static_cast<double>(samples_.size()));
    r.fullestAvg = most / n;
    r.emptiestAvg = fewest / n;
    r.meanGap = gap / n;
    if (failed_ + connectErrors_ > 0) {
      std::cerr << "handover_bench: " << failed_ << " short connection(s) failed, "
                << connectErrors_ << " connect error(s)\n";
    }
    return r;
  }

  const Settings& s_;
  TcpServer* server_;
  std::mt19937 rng_;
  sockaddr_in addr_{};
  int epfd_ = -1;
  std::string message_;
  std::vector<char> scratch_;
  std::unordered_map<int, Conn> conns_;
  std::deque<Due> pending_;
  uint64_t opened_ = 0;
  uint64_t failed_ = 0;
  uint64_t connectErrors_ = 0;
  std::vector<double> latenciesUs_;
  std::vector<std::pair<size_t, size_t>> samples_;
};

// One run: a fresh echo server with `policy`, the client for --seconds.
Result runOnce(const Settings& s, const Policy& policy) {
  libnet::EventLoopThread serverThread(nullptr, "server", s.backend);
  libnet::EventLoop* loop = serverThread.startLoop();
  std::unique_ptr<TcpServer> server;
  std::promise<uint16_t> port;
  loop->runInLoop([&] {
    server = std::make_unique<TcpServer>(loop, libnet::InetAddress(0, true), "bench",
                                         TcpServer::Options{.threads = s.loops,
                                                            .acceptMode = policy.mode,
                                                            .handOver = policy.handOver,
                                                            .tcpNoDelay = true});
    server->setMessageCallback([](const libnet::TcpConnectionPtr& conn, libnet::Buffer* buf,
                                  libnet::Timestamp) { conn->send(buf); });
    server->start();
    port.set_value(server->listenAddress().port());
  });
  // Waited for before `server` is read: it is set on the loop's thread.
  const uint16_t listening = port.get_future().get();
  Result result;
  {
    Client client(s, listening, server.get());
    result = client.run();
  }
  std::promise<void> gone;
  loop->runInLoop([&] {
    server.reset();
    gone.set_value();
  });
  gone.get_future().wait();
  return result;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void print(const char* tag, const char* policy, const Result& r) {
  std::printf("%-6s %-12s %10.0f %9.0f %9.0f %8.1f %8.1f %8.1f\n", tag, policy, r.shortPerSecond,
              r.p50us, r.p99us, r.fullestAvg, r.emptiestAvg, r.meanGap);
  std::fflush(stdout);
}

void printMedians(const std::vector<std::vector<Result>>& results) {
  for (size_t p = 0; p < kPolicies.size(); ++p) {
    Result m;
    auto col = [&](double Result::*field) {
      std::vector<double> v;
      for (const Result& r : results[p]) v.push_back(r.*field);
      return median(v);
    };
    m.shortPerSecond = col(&Result::shortPerSecond);
    m.p50us = col(&Result::p50us);
    m.p99us = col(&Result::p99us);
    m.fullestAvg = col(&Result::fullestAvg);
    m.emptiestAvg = col(&Result::emptiestAvg);
    m.meanGap = col(&Result::meanGap);
    print("median", kPolicies[p].name, m);
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings s;
  std::string pattern = "periodic";
  libnet::Flags flags(
      "handover_bench",
      "usage: handover_bench [--loops N] [--seconds S] [--runs N] [--rate N] [--every K]\n"
      "                      [--long-rounds N] [--long-bytes B] [--long-period-ms MS]\n"
      "                      [--pattern periodic|random]\n"
      "                      [--backend epoll|uring|auto]\n"
      "See the comment at the top of bench/handover/handover_bench.cc.\n");
  flags.addInt("--loops", &s.loops, 1, 64);
  flags.addInt("--seconds", &s.seconds, 1, 3600);
  flags.addInt("--runs", &s.runs, 1, 100);
  flags.addInt("--rate", &s.rate, 1, 1000000);
  flags.addInt("--every", &s.every, 2, 1000);
  flags.addInt("--long-rounds", &s.longRounds, 1, 1000000);
  flags.addInt("--long-bytes", &s.longBytes, 1, 65536);
  flags.addInt("--long-period-ms", &s.longPeriodMs, 0, 60000);
  flags.addBackend("--backend", &s.backend);
  flags.addCustom("--pattern", [&](std::string_view v) {
    if (v != "periodic" && v != "random") return std::string("expected periodic or random");
    pattern = std::string(v);
    s.randomPattern = v == "random";
    return std::string();
  });
  if (const std::optional<int> status = flags.parse(argc, argv)) return *status;
  libnet::Logger::setLevel(libnet::LogLevel::kWarn);

  std::printf(
      "# loops=%d seconds=%d runs=%d rate=%d every=%d long-rounds=%d long-bytes=%d "
      "long-period-ms=%d pattern=%s backend=%s\n",
      s.loops, s.seconds, s.runs, s.rate, s.every, s.longRounds, s.longBytes, s.longPeriodMs,
      pattern.c_str(), std::string(libnet::pollerKindName(s.backend)).c_str());
  std::printf("%-6s %-12s %10s %9s %9s %8s %8s %8s\n", "", "policy", "short/s", "p50_us", "p99_us",
              "fullest", "emptiest", "gap");
  std::vector<std::vector<Result>> results(kPolicies.size());
  for (int run = 0; run < s.runs; ++run) {
    // Interleaved, the starting policy rotated: drift on a shared machine
    // lands on every policy alike.
    for (size_t k = 0; k < kPolicies.size(); ++k) {
      const size_t p = (k + static_cast<size_t>(run)) % kPolicies.size();
      results[p].push_back(runOnce(s, kPolicies[p]));
      print(("run" + std::to_string(run + 1)).c_str(), kPolicies[p].name, results[p].back());
    }
  }
  printMedians(results);
  return 0;
}
