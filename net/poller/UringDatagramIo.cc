#include "net/poller/UringDatagramIo.h"

#include <liburing.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/poller/BufferRing.h"
#include "net/poller/CompletionHandler.h"
#include "net/poller/DatagramQueue.h"
#include "net/poller/UringContext.h"
#include "net/poller/UringProbe.h"

namespace libnet {

namespace {

// The socket's buffer ring: this many buffers at most (power of two), of
// which kInitialBuffers are provided at first; it grows when a receive finds
// it empty. Only pages the kernel writes into become resident.
constexpr uint32_t kMaxRingBytes = 8 * 1024 * 1024;
constexpr uint32_t kMinBuffers = 16;
constexpr uint32_t kMaxBuffers = 1024;
constexpr uint32_t kInitialBuffers = 16;

// Room for the one control message a receive may carry (UDP_GRO's segment
// size).
constexpr size_t kControlSpace = CMSG_SPACE(sizeof(int));

// UDP_GRO's segment size among a message's control messages; 0 if none.
size_t groSegment(cmsghdr* first, io_uring_recvmsg_out* out, msghdr* msg) {
  for (cmsghdr* c = first; c != nullptr; c = io_uring_recvmsg_cmsg_nexthdr(out, msg, c)) {
    if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
      int size = 0;
      std::memcpy(&size, CMSG_DATA(c), sizeof size);
      return size > 0 ? static_cast<size_t>(size) : 0;
    }
  }
  return 0;
}

uint32_t bufferCountFor(size_t bufferSize) {
  uint32_t count = kMaxBuffers;
  while (count > kMinBuffers && static_cast<size_t>(count) * bufferSize > kMaxRingBytes) count /= 2;
  return count;
}

}  // namespace

class UringDatagramIo::Core final : private CompletionHandler {
 public:
  Core(UringContext* context, EventLoopBase* loop, Params params);

  void start();
  SendStatus send(const InetAddress* to, std::string_view data);
  // The handle is gone: stop, and delete this once nothing is in flight.
  void detach();
  [[nodiscard]] size_t queuedBytes() const { return pending_.bytes() + inFlight_.bytes(); }
  [[nodiscard]] size_t queuedDatagrams() const { return pending_.size() + inFlight_.size(); }
  [[nodiscard]] int fd() const { return fd_.get(); }

 private:
  ~Core();
  void onCompletion(UringOp op, int32_t res, uint32_t flags) override;
  void onTurnEnd() override;
  void armRecv();
  void onReceived(int32_t res, uint32_t flags);
  void deliver(std::string_view bytes, int32_t res);
  void onSent(int32_t res);
  void submitBatch();
  void askTurnEnd() {
    if (turnEndAsked_) return;
    turnEndAsked_ = true;
    context_->atTurnEnd(token_);
  }
  // The readiness fallback (no multishot recvmsg): the socket is readable.
  void readLater() {
    readPending_ = true;
    askTurnEnd();
  }
  void onReadable();
  void maybeDelete();

  UringContext* context_;
  Owner* owner_;
  UniqueFd fd_;
  size_t maxDatagram_;
  size_t maxQueued_;
  bool gro_;
  uint64_t token_ = 0;
  const bool multishot_;
  uint16_t group_ = 0;
  std::unique_ptr<BufferRing> buffers_;
  msghdr recvMsg_{};  // the layout the multishot recvmsg writes (name length)
  Channel channel_;   // the readiness fallback
  std::unique_ptr<char[]> readArea_;
  DatagramQueue pending_;   // sends of this turn, not yet submitted
  DatagramQueue inFlight_;  // the batch submitted, until all of it completed
  std::vector<msghdr> sendMsgs_;
  std::vector<iovec> sendIov_;
  size_t sendsInFlight_ = 0;
  bool recvArmed_ = false;
  bool turnEndAsked_ = false;
  bool readPending_ = false;
  bool detached_ = false;
  bool dispatching_ = false;
};

UringDatagramIo::Core::Core(UringContext* context, EventLoopBase* loop, Params params)
    : context_(context),
      owner_(params.owner),
      fd_(std::move(params.fd)),
      maxDatagram_(params.maxDatagramSize),
      maxQueued_(params.maxQueuedBytes),
      gro_(params.gro),
      multishot_(UringProbe::result().multishotRecvmsg),
      channel_(loop, fd_.get()),
      pending_(SIZE_MAX),
      inFlight_(SIZE_MAX) {
  // The buffer holds the header, the name, the control messages and the
  // payload, in that order: a name length that is a multiple of 8 (and
  // buffers of a multiple of 64 bytes) keeps the control messages aligned
  // for struct cmsghdr.
  recvMsg_.msg_namelen = (sizeof(sockaddr_in6) + 7) / 8 * 8;
  recvMsg_.msg_controllen = gro_ ? kControlSpace : 0;
  if (multishot_) {
    const size_t size = (sizeof(io_uring_recvmsg_out) + recvMsg_.msg_namelen +
                         recvMsg_.msg_controllen + maxDatagram_ + 63) /
                        64 * 64;
    group_ = context_->allocateBufferGroup();
    try {
      buffers_ = std::make_unique<BufferRing>(context_->ring().get(), group_, bufferCountFor(size),
                                              static_cast<uint32_t>(size), kInitialBuffers, false);
    } catch (...) {
      context_->releaseBufferGroup(group_);
      throw;
    }
  } else {
    readArea_.reset(new char[maxDatagram_]);
    // Read at the turn's end, not in the channel's callback, so that a
    // callback destroying the socket never destroys the channel under its
    // own dispatch.
    channel_.setReadCallback([this](Timestamp) { readLater(); });
    channel_.setErrorCallback([this] { readLater(); });
  }
}

UringDatagramIo::Core::~Core() {
  channel_.disableAll();
  channel_.remove();
  if (token_ != 0) context_->unregisterHandler(token_);
  buffers_.reset();  // unregistered before its group id is reused
  if (multishot_) context_->releaseBufferGroup(group_);
  context_->closeFile(std::move(fd_));
}

void UringDatagramIo::Core::start() {
  token_ = context_->registerHandler(this);
  if (multishot_) {
    armRecv();
  } else {
    channel_.enableReading();
  }
}

void UringDatagramIo::Core::armRecv() {
  io_uring_sqe* sqe = context_->getSqe();
  // MSG_TRUNC: the header's payloadlen is the datagram's real size, even
  // when the buffer held less of it.
  io_uring_prep_recvmsg_multishot(sqe, fd_.get(), &recvMsg_, MSG_TRUNC);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = group_;
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kRecv, token_));
  recvArmed_ = true;
}

void UringDatagramIo::Core::onCompletion(UringOp op, int32_t res, uint32_t flags) {
  dispatching_ = true;
  if (op == UringOp::kRecv) {
    onReceived(res, flags);
  } else if (op == UringOp::kSend) {
    onSent(res);
  }
  dispatching_ = false;
  maybeDelete();
}

void UringDatagramIo::Core::onReceived(int32_t res, uint32_t flags) {
  if (!(flags & IORING_CQE_F_MORE)) recvArmed_ = false;
  if (flags & IORING_CQE_F_BUFFER) {
    const BufferRing::Received r = buffers_->received(flags, res);
    if (res > 0 && owner_ != nullptr) deliver(r.bytes, res);
    buffers_->finished(r.id);
  } else if (res == -ENOBUFS) {
    // Every buffer is taken (a burst): more, and the datagrams wait in the
    // socket meanwhile.
    buffers_->grow();
  } else if (res < 0 && res != -ECANCELED && owner_ != nullptr) {
    owner_->onIoError("recvmsg", -res);
  }
  if (!recvArmed_ && !detached_) armRecv();
}

void UringDatagramIo::Core::deliver(std::string_view bytes, int32_t res) {
  auto* out = io_uring_recvmsg_validate(const_cast<char*>(bytes.data()), res, &recvMsg_);
  if (out == nullptr) {
    LOG_ERROR << "recvmsg: a completion of " << res << " bytes without its header";
    return;
  }
  sockaddr_storage name{};
  std::memcpy(&name, io_uring_recvmsg_name(out),
              std::min<size_t>(out->namelen, recvMsg_.msg_namelen));
  InetAddress from;
  from.setSockAddr(name);
  const auto* payload = static_cast<const char*>(io_uring_recvmsg_payload(out, &recvMsg_));
  // The buffer may hold a little more than maxDatagramSize (rounded up):
  // what is beyond it counts as cut, as on epoll.
  const size_t length =
      std::min<size_t>(io_uring_recvmsg_payload_length(out, res, &recvMsg_), maxDatagram_);
  const size_t segment =
      gro_ ? groSegment(io_uring_recvmsg_cmsg_firsthdr(out, &recvMsg_), out, &recvMsg_) : 0;
  handUpSegments(&owner_, from, {payload, length}, std::max<size_t>(out->payloadlen, length),
                 segment);
}

void UringDatagramIo::Core::onReadable() {
  dispatching_ = true;
  while (owner_ != nullptr) {
    sockaddr_storage name{};
    iovec iov{readArea_.get(), maxDatagram_};
    alignas(cmsghdr) char control[kControlSpace];
    msghdr msg{&name, sizeof name, &iov, 1, gro_ ? control : nullptr, gro_ ? kControlSpace : 0, 0};
    const ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      owner_->onIoError("recvmsg", errno);
      continue;
    }
    InetAddress from;
    from.setSockAddr(name);
    const auto size = static_cast<size_t>(n);
    size_t segment = 0;
    if (gro_) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
          int value = 0;
          std::memcpy(&value, CMSG_DATA(c), sizeof value);
          segment = value > 0 ? static_cast<size_t>(value) : 0;
        }
      }
    }
    handUpSegments(&owner_, from, {readArea_.get(), std::min(size, maxDatagram_)}, size, segment);
  }
  dispatching_ = false;
}

DatagramIo::SendStatus UringDatagramIo::Core::send(const InetAddress* to, std::string_view data) {
  if (detached_) return SendStatus::kDropped;
  if (queuedDatagrams() > 0 && queuedBytes() + data.size() > maxQueued_) {
    return SendStatus::kDropped;
  }
  (void)pending_.push(to, data);
  if (sendsInFlight_ != 0) return SendStatus::kQueued;
  askTurnEnd();
  return SendStatus::kSent;
}

void UringDatagramIo::Core::onTurnEnd() {
  turnEndAsked_ = false;
  if (readPending_) {
    readPending_ = false;
    onReadable();
  }
  if (sendsInFlight_ == 0 && !pending_.empty() && !detached_) submitBatch();
  maybeDelete();
}

void UringDatagramIo::Core::submitBatch() {
  std::swap(pending_, inFlight_);
  const size_t n = inFlight_.size();
  // Resized only with nothing in flight: the SQEs point into them.
  if (sendMsgs_.size() < n) {
    sendMsgs_.resize(n);
    sendIov_.resize(n);
  }
  for (size_t i = 0; i < n; ++i) {
    const DatagramQueue::Entry& e = inFlight_.at(i);
    sendIov_[i] = iovec{inFlight_.mutableData(e), e.length};
    sendMsgs_[i] = msghdr{e.hasTo ? const_cast<sockaddr*>(e.to.sockAddr()) : nullptr,
                          e.hasTo ? e.to.sockLen() : 0,
                          &sendIov_[i],
                          1,
                          nullptr,
                          0,
                          0};
    io_uring_sqe* sqe = context_->getSqe();
    io_uring_prep_sendmsg(sqe, fd_.get(), &sendMsgs_[i], MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kSend, token_));
  }
  sendsInFlight_ = n;
}

void UringDatagramIo::Core::onSent(int32_t res) {
  --sendsInFlight_;
  if (res < 0 && res != -ECANCELED && owner_ != nullptr) owner_->onIoError("sendmsg", -res);
  if (sendsInFlight_ != 0) return;
  inFlight_.clear();
  if (!pending_.empty()) {
    if (!detached_) submitBatch();
  } else if (owner_ != nullptr) {
    owner_->onSendQueueDrained();
  }
}

void UringDatagramIo::Core::detach() {
  owner_ = nullptr;
  detached_ = true;
  pending_.clear();
  if (!multishot_) channel_.disableAll();
  if (recvArmed_ || sendsInFlight_ != 0) {
    io_uring_sqe* sqe = context_->getSqe();
    io_uring_prep_cancel_fd(sqe, fd_.get(), IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kIgnore, 0));
  }
  maybeDelete();
}

void UringDatagramIo::Core::maybeDelete() {
  if (detached_ && !dispatching_ && !recvArmed_ && sendsInFlight_ == 0) delete this;
}

UringDatagramIo::UringDatagramIo(UringContext* context, EventLoopBase* loop, Params params)
    : core_(new Core(context, loop, std::move(params))), fd_(core_->fd()) {}

UringDatagramIo::~UringDatagramIo() {
  if (core_ != nullptr) core_->detach();
}

void UringDatagramIo::start() { core_->start(); }

DatagramIo::SendStatus UringDatagramIo::send(const InetAddress* to, std::string_view data, int*) {
  return core_->send(to, data);
}

bool UringDatagramIo::close() {
  // The core outlives this handle by itself (even from inside its own
  // completion), so the handle can always go at once.
  core_->detach();
  core_ = nullptr;
  return true;
}

size_t UringDatagramIo::queuedBytes() const { return core_ != nullptr ? core_->queuedBytes() : 0; }

size_t UringDatagramIo::queuedDatagrams() const {
  return core_ != nullptr ? core_->queuedDatagrams() : 0;
}

}  // namespace libnet
