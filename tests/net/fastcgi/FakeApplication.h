// A scripted FastCGI application for the failures php-fpm does not make on
// demand: on a Unix socket of its own, on its own thread, it takes one
// connection, reads one request (to its empty FCGI_STDIN), writes `reply`
// (any bytes: records, garbage, nothing) and then waits, bounded, for the
// web server to close the connection (or closes first, with closeAfter).
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "base/UniqueFd.h"
#include "net/SocketAddress.h"
#include "net/fastcgi/RecordDecoder.h"

namespace libnet::test {

class FakeApplication {
 public:
  // readRequest false: reads nothing at all (an application that never
  // takes the request off its socket), only waits for the close.
  FakeApplication(std::string reply, bool closeAfter, bool readRequest = true)
      : reply_(std::move(reply)), readRequest_(readRequest) {
    char dir[] = "/tmp/libnet-fcgi-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return;
    dir_ = dir;
    address_ = SocketAddress::unixPath(dir_ + "/app.sock");
    listen_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::bind(listen_.get(), address_.sockAddr(), address_.sockLen()) != 0 ||
        ::listen(listen_.get(), 8) != 0) {
      listen_.reset();
      return;
    }
    thread_ = std::thread([this, closeAfter] { serve(closeAfter); });
  }
  ~FakeApplication() {
    // Ends a blocked accept(), or the wait for a close that a kept
    // connection never makes.
    ::shutdown(listen_.get(), SHUT_RDWR);
    if (const int fd = conn_.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  FakeApplication(const FakeApplication&) = delete;
  FakeApplication& operator=(const FakeApplication&) = delete;

  [[nodiscard]] bool ok() const { return listen_.valid(); }
  [[nodiscard]] const SocketAddress& address() const { return address_; }
  // The request's records were all read (to the empty FCGI_STDIN).
  [[nodiscard]] bool sawRequest() const { return sawRequest_; }
  // The web server closed the connection (read returned 0 or an error).
  [[nodiscard]] bool sawClose() const { return sawClose_; }

 private:
  void serve(bool closeAfter) {
    UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) return;
    conn_ = conn.get();
    if (!readRequest_) {
      pollfd p{conn.get(), POLLRDHUP, 0};
      sawClose_ = ::poll(&p, 1, 20000) == 1 && (p.revents & (POLLRDHUP | POLLHUP)) != 0;
      return;
    }
    timeval tv{20, 0};
    ::setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string in;
    fastcgi::RecordDecoder decoder;
    char buf[65536];
    while (!sawRequest_) {
      const ssize_t n = ::read(conn.get(), buf, sizeof buf);
      if (n <= 0) return;
      in.append(buf, static_cast<size_t>(n));
      fastcgi::Record record;
      size_t used = 0;
      while (decoder.decode(in, &record, &used) == fastcgi::RecordDecoder::Status::kRecord) {
        if (record.type == fastcgi::RecordType::kStdin && record.content.empty()) {
          sawRequest_ = true;
        }
        in.erase(0, used);
      }
    }
    if (!reply_.empty()) (void)!::send(conn.get(), reply_.data(), reply_.size(), MSG_NOSIGNAL);
    if (closeAfter) return;
    while (true) {
      const ssize_t n = ::read(conn.get(), buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR)) {
        sawClose_ = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        return;
      }
    }
  }

  std::string reply_;
  bool readRequest_;
  std::string dir_;
  SocketAddress address_;
  UniqueFd listen_;
  std::thread thread_;
  std::atomic<bool> sawRequest_{false};
  std::atomic<bool> sawClose_{false};
  std::atomic<int> conn_{-1};
};

}  // namespace libnet::test
