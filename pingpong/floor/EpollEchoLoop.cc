#include "pingpong/floor/EpollEchoLoop.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <system_error>

namespace pingpong {
namespace {

// 64 KiB is the most loopback TCP hands over per segment (its MTU), so one
// read normally takes a whole 16 KiB message and whatever queued behind it.
constexpr size_t kBufferSize = 64 * 1024;
// A peer that sends without reading could otherwise grow `pending` without
// bound; past this we stop reading it until the backlog drains.
constexpr size_t kMaxPending = 1 << 20;
constexpr int kMaxEvents = 1024;

[[noreturn]] void throwErrno(const char* call) {
  throw std::system_error(errno, std::generic_category(), call);
}

}  // namespace

EpollEchoLoop::EpollEchoLoop(int listenFd, int signalFd)
    : epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      listenFd_(listenFd),
      signalFd_(signalFd),
      buffer_(new char[kBufferSize]) {
  if (!epoll_.valid()) throwErrno("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.fd = listenFd_;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listenFd_, &ev) < 0) throwErrno("epoll_ctl");
  // Level-triggered and never read: every loop keeps seeing the pending
  // signal, so all of them stop, not just the first to look.
  ev.events = EPOLLIN;
  ev.data.fd = signalFd_;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, signalFd_, &ev) < 0) throwErrno("epoll_ctl");
}

void EpollEchoLoop::run() {
  std::array<epoll_event, kMaxEvents> events;
  while (!stop_) {
    const int n = ::epoll_wait(epoll_.get(), events.data(), kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwErrno("epoll_wait");
    }
    // epoll reports each fd at most once per call and a connection is only
    // closed while handling its own event, so a reused fd number can never
    // receive an event meant for its predecessor within one batch.
    for (int i = 0; i < n; ++i) handleEvent(events[i].data.fd, events[i].events);
  }
}

void EpollEchoLoop::handleEvent(int fd, uint32_t events) {
  if (fd == listenFd_) {
    acceptAll();
    return;
  }
  if (fd == signalFd_) {
    stop_ = true;
    return;
  }
  if (events & EPOLLERR) {
    closeConnection(fd);
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) {
    // With RDHUP the FIN may sit right behind the data; a short read would
    // otherwise end the loop and, edge-triggered, no further event would come.
    readAll(fd, (events & (EPOLLRDHUP | EPOLLHUP)) != 0);
  }
  if ((events & EPOLLOUT) && connections_[fd].fd.valid()) flushPending(fd);
}

void EpollEchoLoop::acceptAll() {
  for (;;) {
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN) {
        // EMFILE and the like: the connection stays queued and is retried
        // on the next edge. A floor server does not keep a spare fd around.
        std::perror("accept4");
      }
      return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (static_cast<size_t>(fd) >= connections_.size()) connections_.resize(fd + 1);
    connections_[fd].fd.reset(fd);
    // Registered once for both directions: edge-triggered EPOLLOUT costs
    // nothing until a write has hit EAGAIN, and no epoll_ctl is needed later.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) {
      std::perror("epoll_ctl");
      closeConnection(fd);
    }
  }
}

void EpollEchoLoop::readAll(int fd, bool untilEof) {
  Connection& conn = connections_[fd];
  for (;;) {
    if (conn.pending.size() >= kMaxPending) {
      conn.readPaused = true;
      return;
    }
    const ssize_t n = ::read(fd, buffer_.get(), kBufferSize);
    if (n > 0) {
      if (!echo(fd, buffer_.get(), static_cast<size_t>(n))) return;
      // A short read drained the socket; new data brings a new edge. This
      // saves the read() that would only return EAGAIN.
      if (static_cast<size_t>(n) < kBufferSize && !untilEof) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    closeConnection(fd);  // EOF or error
    return;
  }
}

bool EpollEchoLoop::echo(int fd, const char* data, size_t n) {
  Connection& conn = connections_[fd];
  if (!conn.pending.empty()) {
    conn.pending.append(data, n);  // keep order behind what is already queued
    return true;
  }
  ssize_t written = ::write(fd, data, n);
  if (written < 0) {
    if (errno != EAGAIN && errno != EINTR) {
      closeConnection(fd);
      return false;
    }
    written = 0;
  }
  if (static_cast<size_t>(written) < n) conn.pending.append(data + written, n - written);
  return true;
}

void EpollEchoLoop::flushPending(int fd) {
  Connection& conn = connections_[fd];
  while (!conn.pending.empty()) {
    const ssize_t n = ::write(fd, conn.pending.data(), conn.pending.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      closeConnection(fd);
      return;
    }
    conn.pending.erase(0, static_cast<size_t>(n));
  }
  if (conn.readPaused) {
    // Data that arrived while paused raised no new edge; read it now.
    conn.readPaused = false;
    readAll(fd, false);
  }
}

void EpollEchoLoop::closeConnection(int fd) {
  Connection& conn = connections_[fd];
  conn.fd.reset();  // close() also removes the fd from the epoll set
  conn.pending = std::string();
  conn.readPaused = false;
}

}  // namespace pingpong
