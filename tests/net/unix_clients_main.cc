// unix_clients_main: opens COUNT connections to an echo server on a Unix
// domain socket and holds them all open at once; each sends 8 bytes of its
// own (its index) and checks that exactly those come back. UnixSocketTest
// runs it in a child process, so that the two ends of 10k connections need
// not fit under one process's RLIMIT_NOFILE.
//
//   unix_clients_main ADDRESS COUNT      (ADDRESS: a path, or @NAME)
//
// Every connect and receive is bounded by a 10 s timeout (SO_SNDTIMEO covers
// a connect waiting for room in a full backlog). Once every connection has
// been made and has had its echo, all are closed together.
//
// stdout, one line: "connected=C echoed=E"; exit 0 when both are COUNT.
// Exit 1 on a failure (stderr says which connection and why), 2 for bad
// arguments.

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "base/UniqueFd.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

int fail(const char* what, int index) {
  std::fprintf(stderr, "unix_clients_main: %s failed at connection %d: %s\n", what, index,
               std::strerror(errno));
  return kExitFailure;
}

bool sendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool recvAll(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::recv(fd, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: unix_clients_main ADDRESS COUNT\n");
    return kExitUsage;
  }
  const std::string_view address = argv[1];
  int count = 0;
  const std::string_view countText = argv[2];
  auto [end, ec] = std::from_chars(countText.data(), countText.data() + countText.size(), count);
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  const bool abstract = !address.empty() && address.front() == '@';
  if (ec != std::errc() || count <= 0 || address.size() >= sizeof sun.sun_path || address.empty()) {
    std::fprintf(stderr, "unix_clients_main: bad arguments\n");
    return kExitUsage;
  }
  std::memcpy(sun.sun_path, address.data(), address.size());
  if (abstract) sun.sun_path[0] = '\0';
  const auto len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size() + (abstract ? 0 : 1));

  std::vector<libnet::UniqueFd> held;
  held.reserve(static_cast<size_t>(count));
  int echoed = 0;
  for (int i = 0; i < count; ++i) {
    libnet::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return fail("socket", i);
    timeval tv{10, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int rc;
    do {
      rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sun), len);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) return fail("connect", i);
    const uint64_t mine = 0x5a5a000000000000ULL | static_cast<uint64_t>(i);
    uint64_t echo = 0;
    if (!sendAll(fd.get(), reinterpret_cast<const char*>(&mine), sizeof mine)) {
      return fail("send", i);
    }
    if (!recvAll(fd.get(), reinterpret_cast<char*>(&echo), sizeof echo)) return fail("recv", i);
    if (echo != mine) {
      std::fprintf(stderr, "unix_clients_main: connection %d got another's bytes\n", i);
      return kExitFailure;
    }
    ++echoed;
    held.push_back(std::move(fd));
  }
  std::printf("connected=%zu echoed=%d\n", held.size(), echoed);
  return 0;
}
