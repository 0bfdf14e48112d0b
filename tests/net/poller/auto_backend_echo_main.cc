// auto_backend_echo_main: an echo TcpServer on PollerKind::kAuto with N I/O
// loop threads, checked by echo traffic from inside the same process.
// PollerSelectionTest runs it as an unprivileged user under small
// RLIMIT_MEMLOCK values, where io_uring's probe can pass while the loops'
// real rings cannot all be built: the process must still serve.
//
//   auto_backend_echo_main THREADS
//
// Listens on 127.0.0.1 (ephemeral port), opens 2 * max(THREADS, 1)
// connections from a plain blocking client thread (so every loop gets some,
// round-robin), sends each 64 KiB of distinct bytes and reads them back.
// stdout: "loops=L uring=U epoll=E echoed=C" (L counts the accepting loop
// too) and exit 0 when every
// connection got exactly its bytes back; exit 1 on a failed echo, 3 when the
// server cannot be set up (the reason on stdout as "error=..."), 2 for bad
// arguments. Library log lines go to stderr.

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"

namespace {

using libnet::EventLoop;
using libnet::InetAddress;
using libnet::PollerKind;
using libnet::SocketAddress;
using libnet::UniqueFd;

constexpr size_t kMessageSize = 64 * 1024;

std::string messageFor(int index) {
  std::string message(kMessageSize, '\0');
  uint32_t x = 2654435761u * static_cast<uint32_t>(index + 1);
  for (char& c : message) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return message;
}

// One blocking round trip; every call bounded by socket timeouts.
bool echoOnce(const SocketAddress& server, int index) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  timeval tv{10, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc;
  do {
    rc = ::connect(fd.get(), server.sockAddr(), server.sockLen());
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) return false;
  const std::string message = messageFor(index);
  std::string_view rest = message;
  while (!rest.empty()) {
    const ssize_t n = ::send(fd.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    rest.remove_prefix(static_cast<size_t>(n));
  }
  std::string got;
  char buf[16384];
  while (got.size() < message.size()) {
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got.append(buf, static_cast<size_t>(n));
  }
  return got == message;
}

}  // namespace

int main(int argc, char* argv[]) {
  int threads = -1;
  if (argc == 2) {
    const std::string_view arg = argv[1];
    const auto [end, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), threads);
    if (ec != std::errc() || end != arg.data() + arg.size()) threads = -1;
  }
  if (threads < 0 || threads > 256) {
    std::cerr << "usage: auto_backend_echo_main THREADS (0..256)\n";
    return 2;
  }
  std::mutex mutex;
  std::vector<PollerKind> kinds;  // guarded by mutex
  std::atomic<int> echoed{0};
  try {
    EventLoop loop(PollerKind::kAuto);
    libnet::TcpServer server(&loop, InetAddress(0, true), "auto-echo", {.threads = threads});
    server.setThreadInitCallback([&](EventLoop* ioLoop) {
      std::lock_guard lock(mutex);
      kinds.push_back(ioLoop->pollerKind());
    });
    server.setMessageCallback([](const libnet::TcpConnectionPtr& conn, libnet::Buffer* buf,
                                 libnet::Timestamp) { conn->send(buf); });
    server.start();  // with 0 threads, the init callback gets this loop
    if (threads > 0) kinds.push_back(loop.pollerKind());
    const SocketAddress address = server.listenAddress();
    const int connections = 2 * std::max(threads, 1);
    std::thread clients([&] {
      for (int i = 0; i < connections; ++i) {
        if (echoOnce(address, i)) echoed.fetch_add(1);
      }
      loop.quit();
    });
    loop.loop();
    clients.join();
    int uring = 0;
    int epoll = 0;
    for (const PollerKind kind : kinds) (kind == PollerKind::kIoUring ? uring : epoll) += 1;
    std::cout << "loops=" << kinds.size() << " uring=" << uring << " epoll=" << epoll
              << " echoed=" << echoed.load() << std::endl;
    return echoed.load() == connections ? 0 : 1;
  } catch (const std::system_error& e) {
    std::cout << "error=" << e.what() << std::endl;
    return 3;
  }
}
