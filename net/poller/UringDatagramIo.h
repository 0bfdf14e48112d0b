// UringDatagramIo: a datagram socket on an io_uring loop. Receives with one
// multishot recvmsg (IORING_OP_RECVMSG, IORING_RECV_MULTISHOT) into a
// provided-buffer ring of the socket's own, whose buffers hold the
// recvmsg header, the sender's address and the socket's largest datagram
// (the loop's shared ring has 16 KiB buffers, and a UDP datagram is up to
// 65,507 bytes); re-armed whenever a completion comes without
// IORING_CQE_F_MORE. Each datagram is handed up as a view of its buffer,
// which goes back to the kernel when the callback returns. On a kernel
// without multishot recvmsg (UringProbe), it receives by readiness instead:
// a Channel (the poller's multishot poll) and recvmsg(2) until EAGAIN.
//
// Sends: the datagrams of one loop turn are copied into the send queue and
// go out at the turn's end as one sendmsg SQE each, with the ring's normal
// submission; the next turn's wait for the previous batch to complete
// (which on a socket with room is at once), so that the memory the SQEs
// point into stays put and the queue's bound holds.
//
// Lifetime: the operations in flight (the receive, a batch of sends) point
// into the socket's state and its buffer ring, so that state (Core) is
// registered with the loop's UringContext and outlives this handle until
// the last of them completes (after close(), a cancel of everything on the
// fd); then the fd is closed through the ring. A loop being destroyed
// turns its poller until none is left.
//
// Owned by its udp::UdpSocket; loop thread only (see DatagramIo.h).
#pragma once

#include "net/DatagramIo.h"

namespace libnet {

class EventLoopBase;
class UringContext;

class UringDatagramIo final : public DatagramIo {
 public:
  UringDatagramIo(UringContext* context, EventLoopBase* loop, Params params);
  ~UringDatagramIo() override;

  void start() override;
  [[nodiscard]] SendStatus send(const InetAddress* to, std::string_view data, int* err) override;
  [[nodiscard]] bool close() override;
  [[nodiscard]] size_t queuedBytes() const override;
  [[nodiscard]] size_t queuedDatagrams() const override;
  [[nodiscard]] int fd() const override { return fd_; }

 private:
  class Core;
  Core* core_;  // deletes itself (see "Lifetime" above)
  int fd_;
};

}  // namespace libnet
