// roundtrip_client: request/response latency against an echo server, the
// way a simple client uses one: send a message, wait for all of it to come
// back, repeat. Blocking socket, default options unless --nodelay (Nagle's
// algorithm on, as in most programs). Prints one machine-readable line:
//
//   RESULT size=8000 nodelay=0 pause_us=0 rounds=300 total_s=0.0123
//          p50_us=38 p90_us=52 p99_us=90 max_us=140 over_30ms=0
//
// usage: roundtrip_client HOST PORT SIZE ROUNDS [--nodelay] [--pause-us N]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host;
  int port = 0;
  size_t size = 0;
  int rounds = 0;
  bool nodelay = false;
  long pauseUs = 0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "roundtrip_client: %s\n"
               "usage: roundtrip_client HOST PORT SIZE ROUNDS [--nodelay] [--pause-us N]\n",
               why);
  std::exit(2);
}

long number(const char* text, long low, long high, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) usage(what);
  return value;
}

Options parse(int argc, char** argv) {
  std::vector<std::string_view> positional;
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--nodelay") {
      o.nodelay = true;
    } else if (arg == "--pause-us") {
      if (++i == argc) usage("--pause-us needs a value");
      o.pauseUs = number(argv[i], 0, 10'000'000, "bad --pause-us");
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 4) usage("expected HOST PORT SIZE ROUNDS");
  o.host = std::string(positional[0]);
  o.port = static_cast<int>(number(std::string(positional[1]).c_str(), 1, 65535, "bad PORT"));
  o.size = static_cast<size_t>(number(std::string(positional[2]).c_str(), 1, 64 << 20, "bad SIZE"));
  o.rounds =
      static_cast<int>(number(std::string(positional[3]).c_str(), 1, 10'000'000, "bad ROUNDS"));
  return o;
}

int connectTo(const Options& o) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o.port));
  if (::inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1) usage("HOST must be numeric IPv4");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::perror("roundtrip_client: connect");
    std::exit(1);
  }
  const int on = 1;
  if (o.nodelay) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  return fd;
}

bool sendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool recvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int fd = connectTo(o);
  std::string request(o.size, '\0');
  for (size_t i = 0; i < o.size; ++i) request[i] = static_cast<char>('a' + i % 26);
  std::string reply(o.size, '\0');
  std::vector<double> us;
  us.reserve(static_cast<size_t>(o.rounds));
  const Clock::time_point start = Clock::now();
  Clock::duration paused{};
  for (int round = 0; round < o.rounds; ++round) {
    if (o.pauseUs > 0 && round > 0) {
      const Clock::time_point before = Clock::now();
      std::this_thread::sleep_for(std::chrono::microseconds(o.pauseUs));
      paused += Clock::now() - before;
    }
    const Clock::time_point sent = Clock::now();
    if (!sendAll(fd, request.data(), request.size()) || !recvAll(fd, reply.data(), reply.size())) {
      std::fprintf(stderr, "roundtrip_client: connection lost in round %d\n", round);
      return 1;
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - sent).count());
    if (reply != request) {
      std::fprintf(stderr, "roundtrip_client: reply %d differs from its request\n", round);
      return 1;
    }
  }
  const double total = std::chrono::duration<double>(Clock::now() - start - paused).count();
  ::close(fd);
  const long over30ms = std::count_if(us.begin(), us.end(), [](double v) { return v > 30000; });
  std::sort(us.begin(), us.end());
  const auto at = [&](double q) {
    return us[std::min(us.size() - 1, static_cast<size_t>(q * static_cast<double>(us.size())))];
  };
  std::printf(
      "RESULT size=%zu nodelay=%d pause_us=%ld rounds=%d total_s=%.4f p50_us=%.0f p90_us=%.0f "
      "p99_us=%.0f max_us=%.0f over_30ms=%ld\n",
      o.size, o.nodelay ? 1 : 0, o.pauseUs, o.rounds, total, at(0.5), at(0.9), at(0.99), us.back(),
      over30ms);
  return 0;
}
