// EpollDatagramIo: a datagram socket on an epoll loop. A Channel with
// EPOLLET; each readable edge drains the socket with recvmmsg(2) batches
// until a batch comes back short (the queue is empty), each datagram handed
// up as a view of a per-thread receive area. Sends go out at once with
// sendmsg(2), except while a received batch is being handed up: what the
// callbacks send then (an echo) is queued and leaves in one sendmmsg(2)
// after the batch. When the socket buffer is full, datagrams wait in the
// DatagramQueue (bounded) for EPOLLOUT.
//
// Owned by its udp::UdpSocket; loop thread only (see DatagramIo.h).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Channel.h"
#include "net/DatagramIo.h"
#include "net/poller/DatagramQueue.h"

namespace libnet {

class EventLoopBase;

class EpollDatagramIo final : public DatagramIo {
 public:
  EpollDatagramIo(EventLoopBase* loop, Params params);
  ~EpollDatagramIo() override;

  void start() override;
  [[nodiscard]] SendStatus send(const InetAddress* to, std::string_view data, int* err) override;
  [[nodiscard]] bool close() override;
  [[nodiscard]] size_t queuedBytes() const override { return queue_.bytes(); }
  [[nodiscard]] size_t queuedDatagrams() const override { return queue_.size(); }
  [[nodiscard]] int fd() const override { return fd_.get(); }

 private:
  void onReadable();
  // One recvmmsg batch handed up; false once the socket is drained (or the
  // owner is gone).
  bool receiveBatch();
  // Sends what is queued until the queue is empty or the socket is full.
  void flush();
  void flushSome();

  Owner* owner_;
  UniqueFd fd_;
  Channel channel_;
  size_t maxDatagram_;
  bool gro_;
  DatagramQueue queue_;
  std::vector<mmsghdr> sendMsgs_;
  std::vector<iovec> sendIov_;
  bool dispatching_ = false;  // a received batch is being handed up
  bool waitingWritable_ = false;
};

}  // namespace libnet
