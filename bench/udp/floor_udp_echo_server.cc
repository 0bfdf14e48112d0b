// The library-free UDP floor: one thread, one non-blocking socket in a
// level-triggered epoll set, datagrams read in recvmmsg batches and each batch
// echoed with one sendmmsg, every datagram back to its own sender. It is the
// practical limit for a reactor's UDP echo on this kernel, the figure that
// libnet's two backends and Boost.Asio are measured against in
// bench/udp/run_udp_bench.py. Echoes the kernel refuses (send buffer full)
// are dropped and counted, as UDP allows.
//
// usage: floor_udp_echo_server --port P [--address A] [--sink] [--batch B]
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <vector>

#include "bench/udp/ServerArgs.h"
#include "pingpong/floor/FloorSetup.h"
#include "pingpong/floor/UniqueFd.h"

namespace {

using pingpong::blockTerminationSignals;
using pingpong::UniqueFd;
using udpbench::ServerArgs;
using udpbench::ServerCounters;

constexpr const char* kProgram = "floor_udp_echo_server";
// Large enough for any UDP payload, so that nothing is ever truncated.
constexpr size_t kSlotBytes = 65536;
// Batches read per wakeup before epoll_wait is asked again: under a flood the
// queue never empties, and the signalfd must still be looked at.
constexpr int kBatchesPerWakeup = 16;

[[noreturn]] void throwErrno(const char* call) {
  throw std::system_error(errno, std::generic_category(), call);
}

class FloorServer {
 public:
  FloorServer(const ServerArgs& args, int signalFd)
      : args_(args), signalFd_(signalFd), slots_(static_cast<size_t>(args.batch)) {
    sockaddr_storage addr;
    socklen_t length = 0;
    (void)udpbench::toSockaddr(args.address, args.port, &addr, &length);
    socket_.reset(::socket(addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket_.valid()) throwErrno("socket");
    if (::bind(socket_.get(), reinterpret_cast<const sockaddr*>(&addr), length) < 0) {
      throwErrno("bind");
    }
    if (::getsockname(socket_.get(), reinterpret_cast<sockaddr*>(&addr), &length) < 0) {
      throwErrno("getsockname");
    }
    port_ =
        ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port
                                         : reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);

    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_.valid()) throwErrno("epoll_create1");
    watch(socket_.get());
    watch(signalFd_);

    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot& slot = slots_[i];
      slot.data.resize(kSlotBytes);
      slot.iov = {slot.data.data(), slot.data.size()};
    }
    recvHeaders_.resize(slots_.size());
    sendHeaders_.resize(slots_.size());
  }

  [[nodiscard]] uint16_t port() const { return port_; }

  // Serves until a signal arrives; returns what was counted.
  ServerCounters run() {
    epoll_event events[2];
    for (;;) {
      const int n = ::epoll_wait(epoll_.get(), events, 2, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        throwErrno("epoll_wait");
      }
      for (int i = 0; i < n; ++i) {
        if (events[i].data.fd == signalFd_) return counters_;
      }
      for (int b = 0; b < kBatchesPerWakeup; ++b) {
        if (receiveBatch() < args_.batch) break;
      }
    }
  }

 private:
  struct Slot {
    std::vector<char> data;
    iovec iov{};
    sockaddr_storage peer{};
  };

  void watch(int fd) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) throwErrno("epoll_ctl");
  }

  // Reads one batch and echoes it; returns how many datagrams it read.
  int receiveBatch() {
    const int batch = args_.batch;
    for (int i = 0; i < batch; ++i) {
      msghdr& h = recvHeaders_[i].msg_hdr;
      h = {};
      h.msg_name = &slots_[i].peer;
      h.msg_namelen = sizeof(sockaddr_storage);
      h.msg_iov = &slots_[i].iov;
      h.msg_iovlen = 1;
    }
    const int n = ::recvmmsg(socket_.get(), recvHeaders_.data(), batch, MSG_DONTWAIT, nullptr);
    if (n <= 0) {
      if (n < 0 && errno != EAGAIN && errno != EINTR) throwErrno("recvmmsg");
      return 0;
    }
    counters_.received += n;
    for (int i = 0; i < n; ++i) counters_.bytes += recvHeaders_[i].msg_len;
    if (!args_.sink) echo(n);
    return n;
  }

  void echo(int n) {
    for (int i = 0; i < n; ++i) {
      msghdr& h = sendHeaders_[i].msg_hdr;
      h = {};
      h.msg_name = &slots_[i].peer;
      h.msg_namelen = recvHeaders_[i].msg_hdr.msg_namelen;
      slots_[i].iov.iov_len = recvHeaders_[i].msg_len;
      h.msg_iov = &slots_[i].iov;
      h.msg_iovlen = 1;
    }
    int done = 0;
    while (done < n) {
      const int sent = ::sendmmsg(socket_.get(), sendHeaders_.data() + done, n - done, 0);
      if (sent > 0) {
        counters_.echoed += sent;
        done += sent;
      } else if (sent < 0 && errno == EINTR) {
        continue;
      } else if (sent < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
        // The socket buffer is full: UDP may drop, and waiting here would
        // stall every other sender.
        counters_.dropped += n - done;
        break;
      } else {
        // This datagram's peer is unreachable; the rest may be fine.
        ++counters_.dropped;
        ++done;
      }
    }
    for (int i = 0; i < n; ++i) slots_[i].iov.iov_len = kSlotBytes;
  }

  ServerArgs args_;
  int signalFd_;
  UniqueFd socket_;
  UniqueFd epoll_;
  uint16_t port_ = 0;
  std::vector<Slot> slots_;
  std::vector<mmsghdr> recvHeaders_;
  std::vector<mmsghdr> sendHeaders_;
  ServerCounters counters_;
};

}  // namespace

int main(int argc, char** argv) {
  const ServerArgs args =
      udpbench::parseServerArgs(argc, argv, {.program = kProgram, .batch = true});
  try {
    UniqueFd signals = blockTerminationSignals();
    FloorServer server(args, signals.get());
    std::printf("listening on %s\n", udpbench::formatEndpoint(args.address, server.port()).c_str());
    std::fflush(stdout);
    udpbench::printStopLine(server.run());
    return 0;
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 1;
  }
}
