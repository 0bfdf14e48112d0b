#include "net/udp/UdpSocket.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/DatagramIo.h"
#include "net/EventLoop.h"
#include "net/LoopInternals.h"
#include "net/Poller.h"
#include "net/Socket.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace libnet::udp {

namespace {

constexpr size_t kMaxDatagramStorage = 65536;
// The largest UDP payload over IPv4: 65,535 bytes less the IPv4 and UDP
// headers (over IPv6, 65,527).
constexpr size_t kMaxIpv4Payload = 65507;

[[noreturn]] void throwSystem(int err, const std::string& what) {
  throw std::system_error(err, std::system_category(), what);
}

void setOption(int fd, int level, int name, int value, const char* what, const InetAddress& addr) {
  if (::setsockopt(fd, level, name, &value, sizeof value) != 0) {
    throwSystem(errno, std::string("UdpSocket: setsockopt ") + what + " on " + addr.toIpPort());
  }
}

void checkOptions(const UdpSocket::Options& o) {
  if (o.maxDatagramSize == 0 || o.maxDatagramSize > kMaxDatagramStorage) {
    throw std::invalid_argument("UdpSocket: Options::maxDatagramSize must be 1..65536 (is " +
                                std::to_string(o.maxDatagramSize) + ")");
  }
  if (o.gro && o.maxDatagramSize != kMaxDatagramStorage) {
    throw std::invalid_argument("UdpSocket: Options::gro needs maxDatagramSize 65536 (is " +
                                std::to_string(o.maxDatagramSize) + ")");
  }
  if (o.receiveBufferSize < 0 || o.sendBufferSize < 0) {
    throw std::invalid_argument("UdpSocket: Options::receiveBufferSize/sendBufferSize is negative");
  }
  for (const InetAddress& group : o.multicastGroups) {
    if (group.family() != o.bind.family()) {
      throw std::invalid_argument("UdpSocket: multicast group " + group.toIp() +
                                  " is not of the bound address's family");
    }
  }
}

void joinGroups(int fd, const UdpSocket::Options& o) {
  const bool v6 = o.bind.family() == AF_INET6;
  for (const InetAddress& group : o.multicastGroups) {
    int rc;
    if (v6) {
      ipv6_mreq req{};
      req.ipv6mr_multiaddr = reinterpret_cast<const sockaddr_in6*>(group.sockAddr())->sin6_addr;
      req.ipv6mr_interface = o.multicastInterface;
      rc = ::setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &req, sizeof req);
    } else {
      ip_mreqn req{};
      req.imr_multiaddr = reinterpret_cast<const sockaddr_in*>(group.sockAddr())->sin_addr;
      req.imr_ifindex = static_cast<int>(o.multicastInterface);
      rc = ::setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &req, sizeof req);
    }
    if (rc != 0) throwSystem(errno, "UdpSocket: joining multicast group " + group.toIp());
  }
}

void setMulticastOptions(int fd, const UdpSocket::Options& o) {
  const bool v6 = o.bind.family() == AF_INET6;
  setOption(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MULTICAST_LOOP : IP_MULTICAST_LOOP,
            o.multicastLoop ? 1 : 0, "multicast loop", o.bind);
  if (o.multicastInterface != 0) {
    int rc;
    if (v6) {
      const int index = static_cast<int>(o.multicastInterface);
      rc = ::setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &index, sizeof index);
    } else {
      ip_mreqn req{};
      req.imr_ifindex = static_cast<int>(o.multicastInterface);
      rc = ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &req, sizeof req);
    }
    if (rc != 0) throwSystem(errno, "UdpSocket: setsockopt multicast interface");
  }
  joinGroups(fd, o);
}

UniqueFd makeSocket(const UdpSocket::Options& o) {
  UniqueFd fd(::socket(o.bind.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!fd) throwSystem(errno, "UdpSocket: socket");
  const int s = fd.get();
  if (o.reuseAddr) setOption(s, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR", o.bind);
  if (o.reusePort) setOption(s, SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT", o.bind);
  if (o.receiveBufferSize > 0) {
    setOption(s, SOL_SOCKET, SO_RCVBUF, o.receiveBufferSize, "SO_RCVBUF", o.bind);
  }
  if (o.sendBufferSize > 0) {
    setOption(s, SOL_SOCKET, SO_SNDBUF, o.sendBufferSize, "SO_SNDBUF", o.bind);
  }
  if (o.gsoSegmentSize > 0) {
    setOption(s, SOL_UDP, UDP_SEGMENT, o.gsoSegmentSize, "UDP_SEGMENT (GSO)", o.bind);
  }
  if (o.gro) setOption(s, SOL_UDP, UDP_GRO, 1, "UDP_GRO", o.bind);
  if (o.bind.family() == AF_INET6 && o.bind.isWildcard()) {
    // Both families on a wildcard IPv6 socket, as the kernel's default says;
    // set explicitly so that the system's bindv6only does not decide.
    setOption(s, IPPROTO_IPV6, IPV6_V6ONLY, 0, "IPV6_V6ONLY", o.bind);
  }
  if (!o.multicastGroups.empty() || o.multicastInterface != 0 || !o.multicastLoop) {
    setMulticastOptions(s, o);
  }
  if (::bind(s, o.bind.sockAddr(), o.bind.sockLen()) != 0) {
    throwSystem(errno, "UdpSocket: bind " + o.bind.toIpPort());
  }
  return fd;
}

}  // namespace

const char* sendResultName(SendResult result) {
  switch (result) {
    case SendResult::kSent:
      return "sent";
    case SendResult::kQueued:
      return "queued";
    case SendResult::kDropped:
      return "dropped";
    case SendResult::kError:
      return "error";
  }
  return "?";
}

struct UdpSocket::Callbacks {
  ReceiveCallback receive;
  ErrorCallback error;
  DrainedCallback drained;
};

// What the strategy reports to: the socket's callbacks and counters. A
// callback may destroy the socket; this object and the callbacks then live
// on until it has returned (see ~UdpSocket), and nothing of the socket is
// touched after a callback.
class UdpSocket::Owner final : public DatagramIo::Owner {
 public:
  Owner(UdpSocket* socket, Callbacks* callbacks) : s_(socket), cb_(callbacks) {}

  void onDatagram(const InetAddress& from, std::string_view data, size_t fullSize) override {
    ++s_->received_;
    s_->receivedBytes_ += data.size();
    const DatagramFlags flags{fullSize > data.size(), fullSize};
    if (flags.truncated) ++s_->truncated_;
    if (cb_->receive) call("UDP receive callback", [&] { cb_->receive(from, data, flags); });
  }
  void onIoError(const char* call, int err) override {
    ++s_->errors_;
    if (cb_->error) {
      this->call("UDP error callback", [&] { cb_->error(call, err); });
    } else {
      LOG_DEBUG << "UDP " << call << " on fd " << s_->fd_ << ": " << strerrorTl(err);
    }
  }
  void onSendQueueDrained() override {
    if (cb_->drained) call("UDP drained callback", [&] { cb_->drained(); });
  }
  // Whether a callback is running (the socket is being destroyed from it).
  [[nodiscard]] bool inCallback() const { return depth_ > 0; }

 private:
  template <class F>
  void call(const char* what, F&& f) {
    ++depth_;
    (void)callGuarded(what, std::forward<F>(f));
    --depth_;
  }

  UdpSocket* s_;
  Callbacks* cb_;
  int depth_ = 0;
};

UdpSocket::UdpSocket(EventLoop* loop, const Options& options) : loop_(loop), options_(options) {
  loop_->assertInLoopThread();
  checkOptions(options_);
  unstartedFd_ = makeSocket(options_);
  fd_ = unstartedFd_.get();
  if (options_.bind.family() == AF_INET6) {
    int on = 0;
    socklen_t len = sizeof on;
    v6Only_ = ::getsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &on, &len) == 0 && on != 0;
  }
  callbacks_ = std::make_unique<Callbacks>();
  owner_ = std::make_unique<Owner>(this, callbacks_.get());
}

UdpSocket::UdpSocket(EventLoop* loop) : UdpSocket(loop, Options{}) {}

UdpSocket::~UdpSocket() {
  loop_->assertInLoopThread();
  const bool strategyDone = io_ == nullptr || io_->close();
  if (!strategyDone || owner_->inCallback()) {
    // Destroyed from inside its own callback: that callback (its closure),
    // the owner that called it and the strategy's handler are still on the
    // stack, and go once they have returned.
    loop_->queueInLoop([io = std::move(io_), owner = std::move(owner_),
                        callbacks = std::move(callbacks_)]() mutable {
      io.reset();
      owner.reset();
      callbacks.reset();
    });
  }
}

void UdpSocket::checkNotStarted(const char* what) const {
  if (started()) throw std::logic_error(std::string("UdpSocket: ") + what + " after start()");
}

void UdpSocket::setReceiveCallback(ReceiveCallback cb) {
  checkNotStarted("setReceiveCallback");
  callbacks_->receive = std::move(cb);
}

void UdpSocket::setErrorCallback(ErrorCallback cb) {
  checkNotStarted("setErrorCallback");
  callbacks_->error = std::move(cb);
}

void UdpSocket::setDrainedCallback(DrainedCallback cb) {
  checkNotStarted("setDrainedCallback");
  callbacks_->drained = std::move(cb);
}

void UdpSocket::start() {
  loop_->assertInLoopThread();
  checkNotStarted("start");
  io_ = LoopInternals::poller(*loop_).newDatagramIo(
      DatagramIo::Params{owner_.get(), std::move(unstartedFd_), options_.maxDatagramSize,
                         options_.maxQueuedBytes, options_.gro});
  io_->start();
}

void UdpSocket::connect(const InetAddress& peer) {
  loop_->assertInLoopThread();
  if (::connect(fd_, peer.sockAddr(), peer.sockLen()) != 0) {
    throwSystem(errno, "UdpSocket: connect " + peer.toIpPort());
  }
  connected_ = true;
}

SendResult UdpSocket::send(std::string_view data) {
  if (!connected_) throw std::logic_error("UdpSocket: send() on a socket not connected");
  return sendImpl(nullptr, data);
}

SendResult UdpSocket::sendTo(const InetAddress& peer, std::string_view data) {
  return sendImpl(&peer, data);
}

bool UdpSocket::mayBeRefused(const InetAddress* peer, size_t size) const {
  // What udp_sendmsg and udpv6_sendmsg refuse before they route a datagram:
  // more than IPv4's payload (IPv6 takes 20 bytes more; such a datagram goes
  // this way too, and the kernel sends it), port 0, a destination of the
  // other family where the socket cannot reach it (IPv6 from an IPv4
  // socket; IPv4, or IPv4-mapped IPv6, from an IPv6-only one). A datagram
  // that fits is none of these, and goes the batched way.
  if (size > kMaxIpv4Payload) return true;
  if (peer == nullptr) return false;
  if (peer->port() == 0) return true;
  if (options_.bind.family() == AF_INET) return peer->family() != AF_INET;
  if (!v6Only_) return false;
  if (peer->family() == AF_INET) return true;
  const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(peer->sockAddr());
  return IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr);
}

SendResult UdpSocket::sendImpl(const InetAddress* peer, std::string_view data) {
  loop_->assertInLoopThread();
  if (!started()) throw std::logic_error("UdpSocket: send before start()");
  int err = 0;
  DatagramIo::SendStatus status = DatagramIo::SendStatus::kQueued;
  if (mayBeRefused(peer, data.size())) status = io_->sendNow(peer, data, &err);
  if (status == DatagramIo::SendStatus::kQueued) status = io_->send(peer, data, &err);
  switch (status) {
    case DatagramIo::SendStatus::kSent:
      ++sent_;
      return SendResult::kSent;
    case DatagramIo::SendStatus::kQueued:
      ++sent_;
      return SendResult::kQueued;
    case DatagramIo::SendStatus::kDropped:
      ++dropped_;
      return SendResult::kDropped;
    case DatagramIo::SendStatus::kError:
      break;
  }
  ++errors_;
  lastSendError_ = err;
  return SendResult::kError;
}

InetAddress UdpSocket::localAddress() const {
  // A datagram socket here is always AF_INET or AF_INET6.
  return Socket::localAddress(fd_).inet().value_or(InetAddress());
}

size_t UdpSocket::queuedBytes() const { return io_ != nullptr ? io_->queuedBytes() : 0; }

size_t UdpSocket::queuedDatagrams() const { return io_ != nullptr ? io_->queuedDatagrams() : 0; }

}  // namespace libnet::udp
