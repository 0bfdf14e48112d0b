// HalfClosingServer: a raw HTTP server on a thread of its own, for a moment
// that a script cannot pick. It answers one keep-alive request, and when
// told (closeFirstAndWaitForAck()), half-closes that connection and waits
// until the client's kernel has acknowledged the FIN (TCP_INFO: FIN_WAIT2),
// so that the FIN is at the client's socket while the client's loop, busy
// in the caller, has not polled since. Then it answers one request on a new
// connection with "new", and records that request. Every wait is bounded
// (kWait); destroying the server stops its thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>

#include "base/UniqueFd.h"
#include "tests/net/TestUtil.h"

namespace libnet::test {

class HalfClosingServer {
 public:
  HalfClosingServer() {
    listener_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof addr;
    int pipeFds[2];
    if (!listener_.valid() || ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), length) ||
        ::listen(listener_.get(), 8) ||
        ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &length) ||
        ::pipe2(pipeFds, O_CLOEXEC)) {
      return;
    }
    stopRead_.reset(pipeFds[0]);
    stopWrite_.reset(pipeFds[1]);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~HalfClosingServer() {
    if (!thread_.joinable()) return;
    tellToClose();  // if the test never did
    (void)!::write(stopWrite_.get(), "x", 1);
    thread_.join();
  }
  HalfClosingServer(const HalfClosingServer&) = delete;
  HalfClosingServer& operator=(const HalfClosingServer&) = delete;

  [[nodiscard]] uint16_t port() const { return port_; }

  // Half-closes the first connection; true once the client's kernel has
  // acknowledged the FIN. Once only.
  bool closeFirstAndWaitForAck() {
    tellToClose();
    std::future<bool> acked = finAcked_.get_future();
    return acked.wait_for(kWait) == std::future_status::ready && acked.get();
  }

  // The request the second connection carried (after the destructor, or once
  // its answer was read).
  [[nodiscard]] std::string secondRequest() {
    std::future<std::string> second = secondRequest_.get_future();
    return second.wait_for(kWait) == std::future_status::ready ? second.get() : std::string();
  }

 private:
  void tellToClose() {
    if (told_) return;
    told_ = true;
    closeNow_.set_value();
  }

  // A connection, or an invalid fd when stopped or after kWait.
  UniqueFd acceptOne() {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stopRead_.get(), POLLIN, 0}};
    const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kWait);
    int n = 0;
    do {
      n = ::poll(fds, 2, static_cast<int>(timeout.count()));
    } while (n < 0 && errno == EINTR);
    if (n <= 0 || (fds[0].revents & POLLIN) == 0) return UniqueFd();
    UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    timeval bound{static_cast<time_t>(timeout.count() / 1000), 0};
    ::setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
    ::setsockopt(conn.get(), SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof bound);
    return conn;
  }

  // The header section and the body its Content-Length announces.
  static std::string readRequest(int fd) {
    std::string request;
    char buf[4096];
    size_t end = std::string::npos;
    size_t length = 0;
    while (end == std::string::npos || request.size() < end + 4 + length) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
      if (end == std::string::npos && (end = request.find("\r\n\r\n")) != std::string::npos) {
        const size_t at = request.find("Content-Length: ");
        if (at != std::string::npos && at < end) length = std::stoul(request.substr(at + 16));
      }
    }
    return request;
  }

  static void sendAll(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
  }

  static bool finAcknowledged(int fd) {
    tcp_info info{};
    socklen_t length = sizeof info;
    return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0 &&
           info.tcpi_state == TCP_FIN_WAIT2;
  }

  void run() {
    UniqueFd first = acceptOne();
    if (first.valid()) {
      (void)readRequest(first.get());
      sendAll(first.get(), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    }
    std::future<void> closeNow = closeNow_.get_future();
    const bool told = closeNow.wait_for(kWait) == std::future_status::ready;
    bool acked = false;
    if (told && first.valid() && ::shutdown(first.get(), SHUT_WR) == 0) {
      acked = waitUntil([&] { return finAcknowledged(first.get()); });
    }
    finAcked_.set_value(acked);
    UniqueFd second = acceptOne();
    std::string request;
    if (second.valid()) {
      request = readRequest(second.get());
      sendAll(second.get(), "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnew");
    }
    secondRequest_.set_value(std::move(request));
  }

  UniqueFd listener_;
  UniqueFd stopRead_;
  UniqueFd stopWrite_;
  uint16_t port_ = 0;
  bool told_ = false;  // the test's thread only
  std::promise<void> closeNow_;
  std::promise<bool> finAcked_;
  std::promise<std::string> secondRequest_;
  std::thread thread_;
};

}  // namespace libnet::test
