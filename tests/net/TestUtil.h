// Helpers for the net tests: run a function on a loop thread and wait for it
// (bounded), count this process's open fds, a small blocking client with
// timeouts on every call, and access to TcpConnection's library-only entry
// points.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/Poller.h"
#include "net/PollerKind.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"

// In a parameterized fixture's SetUp(): skips a test instantiated for a
// backend that cannot run here (a kernel without io_uring, a seccomp filter,
// io_uring_disabled=2), naming the probe's reason, instead of failing it.
#define LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(kind)                                              \
  do {                                                                                        \
    if (const std::string why = ::libnet::EventLoop::unavailableReason(kind); !why.empty()) { \
      GTEST_SKIP() << why;                                                                    \
    }                                                                                         \
  } while (0)

namespace libnet::test {

constexpr auto kWait = std::chrono::seconds(10);

// Runs `fn` on `loop`'s thread and returns its result; throws if it does not
// complete within kWait.
template <class F>
auto runSync(EventLoop* loop, F&& fn) -> decltype(fn()) {
  using R = decltype(fn());
  auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(fn));
  std::future<R> result = task->get_future();
  loop->runInLoop([task] { (*task)(); });
  if (result.wait_for(kWait) != std::future_status::ready) {
    throw std::runtime_error("runSync: loop did not run the task in time");
  }
  return result.get();
}

// Polls `pred` until it holds or `timeout` passes; returns its last value.
// A bounded wait on a condition, for state that has no event to wait on.
template <class Pred>
bool waitUntil(Pred&& pred, std::chrono::milliseconds timeout = kWait) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

inline int openFdCount() {
  int count = 0;
  if (DIR* dir = ::opendir("/proc/self/fd")) {
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    ::closedir(dir);
    --count;  // the directory stream's own fd
  }
  return count;
}

// Resident bytes of the pages that overlap [p, p + length) (mincore); -1 if
// the range is not mapped memory.
inline long residentBytes(const void* p, size_t length) {
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return -1;
  const auto begin =
      reinterpret_cast<uintptr_t>(p) / static_cast<uintptr_t>(page) * static_cast<uintptr_t>(page);
  const size_t span = reinterpret_cast<uintptr_t>(p) + length - begin;
  std::vector<unsigned char> resident(span / static_cast<size_t>(page) + 1);
  if (::mincore(reinterpret_cast<void*>(begin), span, resident.data()) != 0) return -1;
  long pages = 0;
  for (const unsigned char r : resident) pages += r & 1;
  return pages * page;
}

inline std::string randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// An unlinked temporary file holding `contents` (invalid if it could not be
// made), for sendFile tests.
inline UniqueFd temporaryFile(const std::string& contents) {
  char path[] = "/tmp/libnet-sendfile-XXXXXX";
  UniqueFd fd(::mkstemp(path));
  if (!fd) return fd;
  ::unlink(path);
  if (::write(fd.get(), contents.data(), contents.size()) !=
      static_cast<ssize_t>(contents.size())) {
    fd.reset();
  }
  return fd;
}

// TcpConnection's library-only entry points (TcpServer's and TcpClient's),
// for tests that make connections of their own.
struct TcpConnectionAccess {
  // TcpConnection::create(): a connection not yet established.
  template <class... Args>
  static TcpConnectionPtr create(Args&&... args) {
    return TcpConnection::create(std::forward<Args>(args)...);
  }
};

// Fixture over the backends for tests that run a loop on the test thread:
// armWatchdog() quits the loop and records the failure if the test is still
// running after kWait, so a lost wake-up or timer fails instead of hanging.
class LoopTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override { LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam()); }

  void armWatchdog(EventLoop& loop) {
    loop.runAfter(kWait, [this, &loop] {
      timedOut_ = true;
      loop.quit();
    });
  }

  bool timedOut_ = false;
};

inline std::string pollerName(const ::testing::TestParamInfo<PollerKind>& info) {
  return std::string(pollerKindName(info.param));
}

// A blocking client socket; every call is bounded by SO_RCVTIMEO/SO_SNDTIMEO.
// Calls are retried on EINTR, which comes without any signal when this thread
// has used an io_uring (a loop of an earlier test on the test thread): task
// work the kernel queues for the thread interrupts its blocking calls.
class BlockingClient {
 public:
  explicit BlockingClient(const SocketAddress& server, int rcvbuf = 0) {
    fd_.reset(::socket(server.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd_) throw std::runtime_error("socket failed");
    timeval tv{5, 0};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (rcvbuf > 0) ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    // An interrupted blocking connect goes on in the kernel; calling it again
    // waits for the same handshake (Linux) and returns 0 once it is done.
    int rc;
    do {
      rc = ::connect(fd_.get(), server.sockAddr(), server.sockLen());
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      throw std::runtime_error("connect to " + server.toIpPort() +
                               " failed: " + std::strerror(errno));
    }
  }

  int fd() const { return fd_.get(); }

  bool sendAll(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_.get(), data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads exactly n bytes, or fewer if the peer closes / an error or timeout
  // happens first.
  std::string recvExactly(size_t n) {
    std::string out;
    out.reserve(n);
    char buf[65536];
    while (out.size() < n) {
      const ssize_t got = ::recv(fd_.get(), buf, std::min(sizeof buf, n - out.size()), 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      out.append(buf, static_cast<size_t>(got));
    }
    return out;
  }

  // Reads until end of file; sets *eof when the peer closed cleanly.
  std::string recvUntilEof(bool* eof) {
    std::string out;
    char buf[65536];
    *eof = false;
    for (;;) {
      const ssize_t got = ::recv(fd_.get(), buf, sizeof buf, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got == 0) {
        *eof = true;
        break;
      }
      if (got < 0) break;
      out.append(buf, static_cast<size_t>(got));
    }
    return out;
  }

  void shutdownWrite() { ::shutdown(fd_.get(), SHUT_WR); }
  void close() { fd_.reset(); }

  // Closes with an RST instead of a FIN.
  void resetConnection() {
    linger lg{1, 0};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    fd_.reset();
  }

 private:
  UniqueFd fd_;
};

// Fixture for tests of a TcpServer on a loop thread of the backend under
// test: startServer() runs an echo server on an ephemeral loopback port that
// counts connections going up and down; the server is destroyed on its loop.
class EchoServerTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "server", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    stopServer();
    thread_.reset();
  }

  // The server is made with `options`; `configure` (callbacks) runs on the
  // loop thread before start().
  void startServer(const std::function<void(TcpServer&)>& configure = {},
                   const TcpServer::Options& options = {},
                   const SocketAddress& listen = InetAddress(0, true)) {
    ups_ = 0;
    downs_ = 0;
    runSync(loop_, [&] {
      server_ = std::make_unique<TcpServer>(loop_, listen, "test", options);
      server_->setMessageCallback(
          [](const TcpConnectionPtr& conn, Buffer* buf, Timestamp) { conn->send(buf); });
      server_->setConnectionCallback([this](const TcpConnectionPtr& conn) {
        (conn->connected() ? ups_ : downs_).fetch_add(1);
      });
      if (configure) configure(*server_);
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  void stopServer() {
    if (server_) runSync(loop_, [&] { server_.reset(); });
  }

  size_t connectionCount() {
    return runSync(loop_, [&] { return server_->connectionCount(); });
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  SocketAddress address_;
  std::atomic<int> ups_{0};
  std::atomic<int> downs_{0};
};

// Connects to `address` as fast as it can, on a thread of its own, until
// destroyed or `maxAttempts` connects were tried, and hands each connected
// socket to `onConnected` with its attempt's index: what the callback does
// not keep is closed. Every connect and send is bounded by SO_SNDTIMEO.
// The callback runs on the storm's thread only, so it may keep state of its
// own (connections held open, say) without a lock.
class ConnectStorm {
 public:
  using OnConnected = std::function<void(int index, UniqueFd fd)>;

  ConnectStorm(const SocketAddress& address, OnConnected onConnected, int maxAttempts = 100000)
      : onConnected_(std::move(onConnected)),
        thread_([this, address, maxAttempts] { run(address, maxAttempts); }) {}
  ~ConnectStorm() {
    stop_.store(true);
    thread_.join();
  }
  ConnectStorm(const ConnectStorm&) = delete;
  ConnectStorm& operator=(const ConnectStorm&) = delete;

  // A send whose failure does not matter (the server may be gone).
  static void sendIgnoringErrors(const UniqueFd& fd, std::string_view data) {
    (void)::send(fd.get(), data.data(), data.size(), MSG_NOSIGNAL);
  }
  // The close of `fd` will be an RST instead of a FIN.
  static void resetOnClose(const UniqueFd& fd) {
    linger lg{1, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  }

 private:
  void run(const SocketAddress& address, int maxAttempts) {
    for (int i = 0; i < maxAttempts && !stop_.load(); ++i) {
      UniqueFd fd(::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!fd) continue;
      timeval tv{1, 0};
      ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (::connect(fd.get(), address.sockAddr(), address.sockLen()) != 0) continue;
      onConnected_(i, std::move(fd));
    }
  }

  OnConnected onConnected_;  // before thread_: the thread calls it
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A port of 127.0.0.1 that no socket of `type` (SOCK_STREAM, SOCK_DGRAM)
// is bound to at the moment: for a peer that cannot be told port 0, or an
// address that nobody answers at.
inline std::optional<uint16_t> freeLoopbackPort(int type) {
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  const InetAddress any("127.0.0.1", 0);
  if (!fd || ::bind(fd.get(), any.sockAddr(), any.sockLen()) != 0) return std::nullopt;
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) return std::nullopt;
  return ntohs(bound.sin_port);
}

}  // namespace libnet::test
