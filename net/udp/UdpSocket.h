// UdpSocket: a datagram (UDP) socket on an EventLoop, IPv4 or IPv6, on
// either backend: bound at construction, receiving through a callback that
// gets each datagram with its sender's address, sending to any peer
// (sendTo) or to the one it is connected to (connect, send).
//
//   udp::UdpSocket sock(&loop, {.bind = InetAddress(9000)});
//   sock.setReceiveCallback([&](const InetAddress& from, std::string_view data,
//                               udp::DatagramFlags) { (void)sock.sendTo(from, data); });
//   sock.start();
//
// Received data is a view of the backend's storage (the epoll loop's
// receive area, an io_uring provided buffer), valid during the callback
// only: copy what you keep. A datagram larger than Options::maxDatagramSize
// is never cut silently: the callback gets its start with
// DatagramFlags::truncated set and its real size, and it is counted.
//
// Sending never blocks and never grows without bound: a datagram goes to
// the kernel at once (epoll), or with this loop turn's submission (io_uring;
// replies sent from a receive callback leave together, in one sendmmsg on
// epoll); when the socket buffer is full it waits in a queue of at most
// Options::maxQueuedBytes, and one that does not fit there is dropped and
// counted (droppedDatagrams()). sendTo() says which (SendResult). That is
// UDP's own contract (a datagram may be lost) kept in the sender, where the
// alternative, an unbounded queue, would turn a slow network into memory.
// docs/udp.md has the details.
//
// Errors: setup (socket, bind, an option the kernel refuses) throws
// std::system_error naming the call and address; a bad option value
// std::invalid_argument. A datagram the kernel refuses as addressed (too
// large, a family or port the socket cannot send to) is SendResult::kError
// at once, on both backends (docs/udp.md, "Refused at once"). At run time,
// a receive or a send that fails later (an ICMP port unreachable turned
// into ECONNREFUSED on a connected socket) goes to the error callback, and
// the socket goes on.
// A callback that throws is logged (base/Guarded.h); the socket goes on
// (the datagram it was given is simply done with).
//
// Threads: construct, use and destroy on the loop's thread (checked: a
// call from another thread aborts). To send from another thread, copy the
// bytes into a functor given to loop->runInLoop(). Destroying the socket is
// allowed inside its own callbacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "base/UniqueFd.h"
#include "net/InetAddress.h"

namespace libnet {

class DatagramIo;
class EventLoop;

namespace udp {

// What the receive callback is told besides the bytes.
struct DatagramFlags {
  // The datagram was larger than Options::maxDatagramSize: `data` holds its
  // first maxDatagramSize bytes, the rest is lost.
  bool truncated = false;
  // The datagram's size as the kernel reported it (== data.size() unless
  // truncated).
  size_t size = 0;
};

// What became of a datagram given to send() / sendTo().
enum class SendResult : uint8_t {
  kSent,     // handed to the kernel, or leaving with this loop turn's submission
  kQueued,   // the socket buffer is full: queued, sent when it has room
  kDropped,  // the queue is at Options::maxQueuedBytes: not sent (counted)
  kError,    // the kernel refused it at once (lastSendError() says why)
};
[[nodiscard]] const char* sendResultName(SendResult result);

class UdpSocket {
 public:
  struct Options {
    // The local address: IPv4 or IPv6, wildcard or not; port 0 picks a free
    // one (localAddress() says which).
    InetAddress bind{};
    bool reuseAddr = false;
    // SO_REUSEPORT: several sockets (one per loop) on one port, the kernel
    // spreading the senders over them.
    bool reusePort = false;
    // Receive storage per datagram, 1..65,536; a larger datagram arrives
    // truncated (DatagramFlags). The default holds any UDP datagram (65,507
    // bytes over IPv4, 65,527 over IPv6).
    size_t maxDatagramSize = 65536;
    // SO_RCVBUF / SO_SNDBUF in bytes; 0 leaves the kernel's default.
    int receiveBufferSize = 0;
    int sendBufferSize = 0;
    // The send queue's bound, in bytes of datagrams held (see the top of
    // this file). An empty queue takes any one datagram.
    size_t maxQueuedBytes = 1024 * 1024;
    // Multicast groups to join (IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP), of
    // the bound address's family, on `multicastInterface` (an interface
    // index; 0: the kernel's choice). The interface is also where this
    // socket's multicast sends leave (IP_MULTICAST_IF / IPV6_MULTICAST_IF).
    std::vector<InetAddress> multicastGroups{};
    unsigned multicastInterface = 0;
    // Whether this host's own multicast sends come back to its sockets.
    bool multicastLoop = true;
    // UDP_SEGMENT (Linux 4.18+): every send larger than this many bytes
    // leaves as datagrams of this size (the last one shorter), segmented by
    // the kernel or the NIC; one send, many datagrams. 0: off.
    uint16_t gsoSegmentSize = 0;
    // UDP_GRO (Linux 5.0+): the kernel may coalesce datagrams of one flow
    // into one receive (fewer, larger receives); they are still handed to
    // the callback one by one. Needs maxDatagramSize 65,536 (the default),
    // the size of a coalesced receive.
    bool gro = false;
  };

  using ReceiveCallback =
      std::function<void(const InetAddress& from, std::string_view data, DatagramFlags flags)>;
  // `call` names the system call that failed, `err` is its errno.
  using ErrorCallback = std::function<void(std::string_view call, int err)>;
  using DrainedCallback = std::function<void()>;

  // Creates and binds the socket; throws (see the top of this file).
  UdpSocket(EventLoop* loop, const Options& options);
  // Default options: 0.0.0.0, a free port.
  explicit UdpSocket(EventLoop* loop);
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // Before start(); later throws std::logic_error.
  void setReceiveCallback(ReceiveCallback cb);
  void setErrorCallback(ErrorCallback cb);
  // The send queue has emptied (after a datagram was kQueued).
  void setDrainedCallback(DrainedCallback cb);

  // Starts receiving (and sending: send() before start() throws
  // std::logic_error). Once.
  void start();
  [[nodiscard]] bool started() const { return io_ != nullptr; }

  // Fixes the peer (connect(2)): send() goes there, only its datagrams are
  // received, and its ICMP errors are reported (ECONNREFUSED). Throws
  // std::system_error if the kernel refuses (a peer of another family).
  void connect(const InetAddress& peer);
  [[nodiscard]] SendResult send(std::string_view data);
  [[nodiscard]] SendResult sendTo(const InetAddress& peer, std::string_view data);

  [[nodiscard]] InetAddress localAddress() const;
  [[nodiscard]] EventLoop* loop() const { return loop_; }
  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] const Options& options() const { return options_; }

  // Counters (loop thread).
  [[nodiscard]] uint64_t receivedDatagrams() const { return received_; }
  [[nodiscard]] uint64_t receivedBytes() const { return receivedBytes_; }
  [[nodiscard]] uint64_t truncatedDatagrams() const { return truncated_; }
  // Given to the kernel or queued (kSent + kQueued).
  [[nodiscard]] uint64_t sentDatagrams() const { return sent_; }
  [[nodiscard]] uint64_t droppedDatagrams() const { return dropped_; }
  // Receives and sends that failed (each also given to the error callback).
  [[nodiscard]] uint64_t errors() const { return errors_; }
  // The errno of the last send that returned kError.
  [[nodiscard]] int lastSendError() const { return lastSendError_; }
  // Bytes and datagrams waiting in the send queue.
  [[nodiscard]] size_t queuedBytes() const;
  [[nodiscard]] size_t queuedDatagrams() const;

 private:
  class Owner;
  struct Callbacks;

  SendResult sendImpl(const InetAddress* peer, std::string_view data);
  // Whether the kernel may refuse `size` bytes to `peer` (nullptr: the
  // connected peer) on the arguments alone, before routing: those are sent
  // at once (DatagramIo::sendNow), so that the refusal is the result.
  [[nodiscard]] bool mayBeRefused(const InetAddress* peer, size_t size) const;
  void checkNotStarted(const char* what) const;

  EventLoop* loop_;
  Options options_;
  int fd_ = -1;
  UniqueFd unstartedFd_;  // the socket until start() hands it to the strategy
  // What the strategy reports to, and the callbacks: both outlive the
  // socket when it is destroyed from inside a callback (until that returns).
  std::unique_ptr<Owner> owner_;
  std::unique_ptr<Callbacks> callbacks_;
  std::unique_ptr<DatagramIo> io_;
  uint64_t received_ = 0;
  uint64_t receivedBytes_ = 0;
  uint64_t truncated_ = 0;
  uint64_t sent_ = 0;
  uint64_t dropped_ = 0;
  uint64_t errors_ = 0;
  int lastSendError_ = 0;
  bool connected_ = false;
  bool v6Only_ = false;  // IPV6_V6ONLY: an IPv6 socket that cannot reach IPv4 peers
};

}  // namespace udp
}  // namespace libnet
