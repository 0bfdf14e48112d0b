// idle_clients_main: opens COUNT idle connections to an echo server on
// 127.0.0.1:PORT and reports how long each lived before the server closed it.
// TimingWheelTest runs it in a child process, so that the two ends of 10k
// connections need not fit under one process's RLIMIT_NOFILE.
//
//   idle_clients_main PORT COUNT SPREAD_MS WAIT_MS
//
// Connections are made one after another, spread evenly over SPREAD_MS (as
// fast as they go, if that is less). Every 250th sends one byte and
// waits for its echo before the next connect: the server has then accepted
// every connection before it (accepts are in order), so its accept queue
// stays short (a full queue drops SYNs, and a retransmitted SYN would add a
// second to that connection's life). EOFs are collected between connects
// too. After the last connect it waits at most WAIT_MS for the rest.
//
// A connection's life, to when this program sees its EOF, is measured twice:
// from before its connect() (or its byte, for those that sent one), which
// is surely before the server's last look at it, for a lower bound; and from
// when connect() returned (or the echo came back), for an upper bound that
// leaves out a SYN retransmitted by the kernel.
//
// stdout, one line: "eofs=E unexpected=U shortest_us=S longest_us=L
// slowest_connect_us=C", where shortest is the least life from the start,
// longest the greatest from the return, and unexpected counts connections
// that ended with data or an error instead of a clean EOF; exit 0. Exit 1 if a socket call fails
// (stderr says which), 2 for bad arguments.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "base/UniqueFd.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;
constexpr int kPaceEvery = 250;

std::optional<int64_t> parseInt(std::string_view text, int64_t lo, int64_t hi) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < lo ||
      value > hi) {
    return std::nullopt;
  }
  return value;
}

int fail(const char* what, int64_t index) {
  std::fprintf(stderr, "idle_clients_main: %s failed at connection %lld: %s\n", what,
               static_cast<long long>(index), std::strerror(errno));
  return kExitFailure;
}

// Sends one byte and reads its echo, with a bounded wait.
bool pingPong(int fd) {
  const char out = 'p';
  ssize_t n;
  do {
    n = ::send(fd, &out, 1, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return false;
  char in = 0;
  do {
    n = ::recv(fd, &in, 1, 0);
  } while (n < 0 && errno == EINTR);
  return n == 1 && in == out;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: idle_clients_main PORT COUNT SPREAD_MS WAIT_MS\n");
    return kExitUsage;
  }
  const auto port = parseInt(argv[1], 1, 65535);
  const auto count = parseInt(argv[2], 1, 1000000);
  const auto spreadMs = parseInt(argv[3], 0, 3600 * 1000);
  const auto waitMs = parseInt(argv[4], 0, 3600 * 1000);
  if (!port || !count || !spreadMs || !waitMs) {
    std::fprintf(stderr, "idle_clients_main: bad argument (see the usage line)\n");
    return kExitUsage;
  }
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(static_cast<uint16_t>(*port));
  server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  const auto n = static_cast<size_t>(*count);
  libnet::UniqueFd epollFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epollFd) return fail("epoll_create1", 0);
  std::vector<libnet::UniqueFd> clients(n);
  std::vector<Clock::time_point> started(n);
  std::vector<Clock::time_point> answered(n);
  std::vector<Clock::time_point> eofSeen(n);
  size_t eofs = 0;
  size_t unexpected = 0;
  auto slowestConnect = Clock::duration::zero();

  auto collect = [&](int timeoutMs) {
    epoll_event events[256];
    const int ready = ::epoll_wait(epollFd.get(), events, 256, timeoutMs);
    const Clock::time_point now = Clock::now();
    for (int k = 0; k < ready; ++k) {
      const uint32_t i = events[k].data.u32;
      char byte;
      const ssize_t got = ::recv(clients[i].get(), &byte, 1, MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got == 0) {
        eofSeen[i] = now;
        ++eofs;
      } else {
        ++unexpected;
      }
      ::epoll_ctl(epollFd.get(), EPOLL_CTL_DEL, clients[i].get(), nullptr);
      clients[i].reset();
    }
  };

  const Clock::time_point first = Clock::now();
  const auto spread = std::chrono::milliseconds(*spreadMs);
  for (size_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(first +
                                  spread * static_cast<int64_t>(i) / static_cast<int64_t>(n));
    started[i] = Clock::now();
    libnet::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return fail("socket", static_cast<int64_t>(i));
    // Bounds the pacing exchange below.
    timeval tv{10, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int rc;
    do {
      rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&server), sizeof server);
    } while (rc < 0 && errno == EINTR);
    if (rc != 0) return fail("connect", static_cast<int64_t>(i));
    answered[i] = Clock::now();
    slowestConnect = std::max(slowestConnect, answered[i] - started[i]);
    if (i % kPaceEvery == kPaceEvery - 1) {
      started[i] = Clock::now();
      if (!pingPong(fd.get())) return fail("echo exchange", static_cast<int64_t>(i));
      answered[i] = Clock::now();
    }
    if (i % 32 == 0) collect(0);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u32 = static_cast<uint32_t>(i);
    if (::epoll_ctl(epollFd.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) {
      return fail("epoll_ctl", static_cast<int64_t>(i));
    }
    clients[i] = std::move(fd);
  }

  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(*waitMs);
  while (eofs + unexpected < n && Clock::now() < deadline) collect(100);

  auto shortest = Clock::duration::max();
  auto longest = Clock::duration::zero();
  for (size_t i = 0; i < n; ++i) {
    if (eofSeen[i] == Clock::time_point()) continue;
    shortest = std::min(shortest, eofSeen[i] - started[i]);
    longest = std::max(longest, eofSeen[i] - answered[i]);
  }
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  std::printf("eofs=%zu unexpected=%zu shortest_us=%lld longest_us=%lld slowest_connect_us=%lld\n",
              eofs, unexpected,
              static_cast<long long>(eofs ? duration_cast<microseconds>(shortest).count() : 0),
              static_cast<long long>(duration_cast<microseconds>(longest).count()),
              static_cast<long long>(duration_cast<microseconds>(slowestConnect).count()));
  return 0;
}
