// DatagramIo: how one datagram (UDP) socket's datagrams move on its loop's
// backend, the socket's I/O strategy, made by the loop's Poller
// (Poller::newDatagramIo) when the socket is created, so the backend is
// chosen once. The epoll strategy (net/poller/EpollDatagramIo) drains the
// socket with recvmmsg(2) on each readable edge and sends with sendmmsg(2);
// the io_uring strategy (net/poller/UringDatagramIo) keeps one multishot
// recvmsg in flight into a provided-buffer ring of its own and sends with
// sendmsg SQEs, one batch per loop turn.
//
// Each buffer has one writer: the strategy owns the socket's fd (closed when
// the strategy is done with it: the io_uring one may outlive its owner until
// its last operation completes), its receive storage (handed up as a view,
// valid during Owner::onDatagram() only) and its send queue (bounded by
// Params::maxQueuedBytes: what does not fit is refused, and the owner counts
// it). The owner (udp::UdpSocket) keeps the callbacks and the counters.
//
// Made on the socket's loop thread and used on it only. Part of the
// library's inside, not of its API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "base/UniqueFd.h"
#include "net/InetAddress.h"

namespace libnet {

class DatagramIo {
 public:
  // What a strategy tells its socket; loop thread, from the strategy's event
  // or completion handling (never from inside send()).
  class Owner {
   public:
    // A datagram arrived from `from`. `data` views the strategy's storage
    // and is valid during this call only. `fullSize` is the datagram's size
    // as the kernel reported it: larger than data.size() when the datagram
    // did not fit (MSG_TRUNC; the rest is lost).
    virtual void onDatagram(const InetAddress& from, std::string_view data, size_t fullSize) = 0;
    // A receive or a queued send failed with `err` (errno), such as
    // ECONNREFUSED on a connected socket after an ICMP port unreachable.
    // `call` names the system call. The socket goes on.
    virtual void onIoError(const char* call, int err) = 0;
    // The send queue has become empty.
    virtual void onSendQueueDrained() {}

   protected:
    ~Owner() = default;
  };

  // What a strategy works on; the owner outlives the strategy's calls to it.
  struct Params {
    Owner* owner;
    UniqueFd fd;             // the bound socket, non-blocking; the strategy's from now on
    size_t maxDatagramSize;  // receive storage per datagram
    size_t maxQueuedBytes;   // send queue bound (bytes held for the kernel)
    // UDP_GRO is on: a receive may hold several datagrams of one flow,
    // coalesced by the kernel, with their size in a control message; the
    // strategy hands each up on its own (handUpSegments()).
    bool gro = false;
  };

  // What became of a datagram given to send().
  enum class SendStatus : uint8_t {
    kSent,     // handed to the kernel (epoll), or on its way with this turn's submission (io_uring)
    kQueued,   // the socket buffer is full: queued, sent when it has room
    kDropped,  // the queue is at its bound: not sent
    kError,    // the kernel refused it at once (the errno is send()'s `*err`)
  };

  DatagramIo() = default;
  virtual ~DatagramIo() = default;
  DatagramIo(const DatagramIo&) = delete;
  DatagramIo& operator=(const DatagramIo&) = delete;

  // Start receiving.
  virtual void start() = 0;
  // Sends `data` to `to` (nullptr: the connected peer). On kError, `*err`
  // is the errno.
  [[nodiscard]] virtual SendStatus send(const InetAddress* to, std::string_view data, int* err) = 0;
  // Sends `data` with one sendmsg(2) now, ahead of anything queued, and says
  // what became of it: kSent, kError (the kernel refused it; `*err` is the
  // errno), or kQueued when the socket buffer is full, where nothing was
  // sent and the caller send()s it instead. For a datagram the kernel may
  // refuse on its arguments alone (udp::UdpSocket decides which), so that
  // the refusal is the result on every backend and every path: a datagram
  // in an io_uring batch, or a reply queued while a received batch is
  // handed up on epoll, would learn it only when it goes, after send() has
  // said kSent. The strategy's own direct send (epoll) is this too.
  [[nodiscard]] SendStatus sendNow(const InetAddress* to, std::string_view data, int* err) const;
  // The owner is going away: nothing more reaches it, and receiving stops.
  // Returns whether the strategy may be destroyed now: false while its own
  // handler is on the stack (the owner destroyed from inside its callback);
  // the owner then destroys it from the loop's queue.
  [[nodiscard]] virtual bool close() = 0;
  // Bytes and datagrams held in the send queue (not yet taken by the kernel).
  [[nodiscard]] virtual size_t queuedBytes() const = 0;
  [[nodiscard]] virtual size_t queuedDatagrams() const = 0;
  // The socket's fd (owned by the strategy).
  [[nodiscard]] virtual int fd() const = 0;

 protected:
  // Hands `data`, received from `from`, to `*owner` as one datagram, or,
  // when `segment` is not 0 (UDP_GRO), as datagrams of `segment` bytes each
  // (the last may be shorter). Stops when *owner becomes null (the owner
  // closed the strategy from its callback).
  static void handUpSegments(Owner* const* owner, const InetAddress& from, std::string_view data,
                             size_t fullSize, size_t segment) {
    if (segment == 0 || data.size() <= segment) {
      (*owner)->onDatagram(from, data, fullSize);
      return;
    }
    for (size_t at = 0; at < data.size() && *owner != nullptr; at += segment) {
      const std::string_view one = data.substr(at, segment);
      (*owner)->onDatagram(from, one, one.size());
    }
  }
};

}  // namespace libnet
