#include "net/poller/EpollDatagramIo.h"

#include <netinet/udp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "net/EventLoopBase.h"

namespace libnet {

namespace {

// Datagrams one recvmmsg/sendmmsg takes at most.
constexpr size_t kMaxBatch = 32;
// The receive area of a thread is about this large (fewer datagrams per
// batch when they are large); only the pages written into become resident.
constexpr size_t kBatchBytes = 1024 * 1024;
// Room for the one control message a receive may carry (UDP_GRO's segment
// size).
constexpr size_t kControlSpace = CMSG_SPACE(sizeof(int));

// Failed receives in a row (each consuming a pending socket error, such as
// an ICMP port unreachable) before a drain gives up on the socket.
constexpr int kMaxErrorsInARow = 64;

// Where the loop thread's datagram sockets receive: one area per thread,
// shared by its sockets, since a batch is handed up and done with before
// the next is read (the views are valid during the callback only).
struct ReceiveArea {
  size_t slotSize = 0;
  size_t slots = 0;
  std::unique_ptr<char[]> storage;
  std::vector<mmsghdr> msgs;
  std::vector<iovec> iov;
  std::vector<sockaddr_storage> addrs;
  std::vector<char> control;

  void reserve(size_t datagram) {
    if (datagram <= slotSize) return;
    slotSize = datagram;
    slots = std::clamp<size_t>(kBatchBytes / datagram, 1, kMaxBatch);
    // Not value-initialised: untouched pages stay unallocated.
    storage.reset(new char[slotSize * slots]);
    msgs.resize(slots);
    iov.resize(slots);
    addrs.resize(slots);
    control.resize(slots * kControlSpace);
  }
};

// UDP_GRO's segment size in a received message's control data; 0 if none.
size_t groSegment(const msghdr& msg) {
  for (const cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), const_cast<cmsghdr*>(c))) {
    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
      int size = 0;
      std::memcpy(&size, CMSG_DATA(c), sizeof size);
      return size > 0 ? static_cast<size_t>(size) : 0;
    }
  }
  return 0;
}

ReceiveArea& receiveArea(size_t datagram) {
  thread_local ReceiveArea area;
  area.reserve(datagram);
  return area;
}

}  // namespace

EpollDatagramIo::EpollDatagramIo(EventLoopBase* loop, Params params)
    : owner_(params.owner),
      fd_(std::move(params.fd)),
      channel_(loop, fd_.get()),
      maxDatagram_(params.maxDatagramSize),
      gro_(params.gro),
      queue_(params.maxQueuedBytes),
      sendMsgs_(kMaxBatch),
      sendIov_(kMaxBatch) {
  channel_.setReadCallback([this](Timestamp) { onReadable(); });
  // A pending socket error (EPOLLERR) is what the next receive returns.
  channel_.setErrorCallback([this] {
    if (!(channel_.returnedEvents() & EPOLLIN)) onReadable();
  });
  channel_.setWriteCallback([this] {
    waitingWritable_ = false;
    flush();
  });
}

EpollDatagramIo::~EpollDatagramIo() {
  channel_.disableAll();
  channel_.remove();
}

void EpollDatagramIo::start() { channel_.enableReading(); }

bool EpollDatagramIo::close() {
  owner_ = nullptr;
  queue_.clear();
  channel_.disableAll();
  return !dispatching_;
}

DatagramIo::SendStatus EpollDatagramIo::send(const InetAddress* to, std::string_view data,
                                             int* err) {
  if (dispatching_ || !queue_.empty()) {
    if (!queue_.push(to, data)) {
      // While a batch is handed up the queue holds replies, not a backlog:
      // send them and try again.
      if (!dispatching_ || waitingWritable_) return SendStatus::kDropped;
      flushSome();
      if (!queue_.push(to, data)) return SendStatus::kDropped;
    }
    return dispatching_ && !waitingWritable_ ? SendStatus::kSent : SendStatus::kQueued;
  }
  const SendStatus status = sendNow(to, data, err);
  if (status != SendStatus::kQueued) return status;
  (void)queue_.push(to, data);  // the queue is empty: it takes one datagram
  waitingWritable_ = true;
  channel_.enableWriting();
  return SendStatus::kQueued;
}

void EpollDatagramIo::onReadable() {
  dispatching_ = true;
  int errorsInARow = 0;
  while (owner_ != nullptr) {
    const int got = [&] {
      ReceiveArea& area = receiveArea(maxDatagram_);
      for (size_t i = 0; i < area.slots; ++i) {
        area.iov[i] = iovec{area.storage.get() + i * area.slotSize, maxDatagram_};
        area.msgs[i].msg_hdr = msghdr{&area.addrs[i],
                                      sizeof(sockaddr_storage),
                                      &area.iov[i],
                                      1,
                                      gro_ ? &area.control[i * kControlSpace] : nullptr,
                                      gro_ ? kControlSpace : 0,
                                      0};
      }
      // MSG_TRUNC: each msg_len is the datagram's real size, even when it
      // was cut to fit.
      return ::recvmmsg(fd_.get(), area.msgs.data(), static_cast<unsigned>(area.slots),
                        MSG_DONTWAIT | MSG_TRUNC, nullptr);
    }();
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      owner_->onIoError("recvmmsg", errno);
      if (++errorsInARow >= kMaxErrorsInARow) break;
      continue;
    }
    errorsInARow = 0;
    ReceiveArea& area = receiveArea(maxDatagram_);
    for (int i = 0; i < got && owner_ != nullptr; ++i) {
      InetAddress from;
      from.setSockAddr(area.addrs[i]);
      const size_t size = area.msgs[i].msg_len;
      handUpSegments(&owner_, from,
                     {area.storage.get() + i * area.slotSize, std::min(size, maxDatagram_)}, size,
                     gro_ ? groSegment(area.msgs[i].msg_hdr) : 0);
    }
    if (!queue_.empty() && !waitingWritable_) flushSome();
    if (static_cast<size_t>(got) < area.slots) break;  // a short batch: drained
  }
  dispatching_ = false;
  if (owner_ != nullptr && !queue_.empty() && !waitingWritable_) flush();
}

void EpollDatagramIo::flushSome() {
  while (!queue_.empty()) {
    const size_t n = std::min(queue_.size(), kMaxBatch);
    for (size_t i = 0; i < n; ++i) {
      const DatagramQueue::Entry& e = queue_.at(i);
      sendIov_[i] = iovec{queue_.mutableData(e), e.length};
      sendMsgs_[i].msg_hdr = msghdr{e.hasTo ? const_cast<sockaddr*>(e.to.sockAddr()) : nullptr,
                                    e.hasTo ? e.to.sockLen() : 0,
                                    &sendIov_[i],
                                    1,
                                    nullptr,
                                    0,
                                    0};
    }
    const int sent = ::sendmmsg(fd_.get(), sendMsgs_.data(), static_cast<unsigned>(n),
                                MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent > 0) {
      queue_.pop(static_cast<size_t>(sent));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == ENOBUFS) {
      waitingWritable_ = true;
      channel_.enableWriting();
      return;
    }
    // The first datagram failed (too large, refused, unreachable): it is
    // dropped and reported; the rest go on.
    const int err = errno;
    queue_.pop(1);
    if (owner_ != nullptr) owner_->onIoError("sendmmsg", err);
    if (owner_ == nullptr) return;
  }
}

void EpollDatagramIo::flush() {
  const bool had = !queue_.empty();
  flushSome();
  if (!queue_.empty()) return;
  if (channel_.isWriting()) channel_.disableWriting();
  if (had && owner_ != nullptr && !dispatching_) owner_->onSendQueueDrained();
}

}  // namespace libnet
