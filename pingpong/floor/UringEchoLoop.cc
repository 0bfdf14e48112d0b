#include "pingpong/floor/UringEchoLoop.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

namespace pingpong {
namespace {

constexpr unsigned kSqEntries = 2048;
constexpr unsigned kCqEntries = 8192;
// Up to 4096 x 16 KiB: a 16 KiB message normally lands in one buffer. Only
// 64 are provided at first (a small ring stays in cache); a recv that finds
// none (-ENOBUFS) doubles them. Must be a power of two.
constexpr unsigned kBufferCount = 4096;
constexpr unsigned kInitialBuffers = 64;
constexpr size_t kBufferSize = 16 * 1024;
constexpr uint16_t kBufferGroup = 0;
// Past this much queued behind the send in flight (a peer that sends without
// reading), receiving is paused until the queue drains.
constexpr size_t kMaxQueued = 1 << 20;

constexpr uint32_t kGenerationMask = 0xFFFFFF;
constexpr unsigned kFileSlots = 16384;

}  // namespace

UringEchoLoop::UringEchoLoop(int listenFd, int signalFd)
    : listenFd_(listenFd),
      signalFd_(signalFd),
      ring_(kSqEntries, kCqEntries),
      buffers_(ring_.get(), kBufferCount, kBufferSize, kBufferGroup, kInitialBuffers) {
  // A sparse table of registered files: a connection's socket goes into the
  // slot of its index, so recv and send skip the per-op file lookup.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    const auto slots = static_cast<unsigned>(std::min<rlim_t>(files.rlim_cur, kFileSlots));
    if (io_uring_register_files_sparse(ring_.get(), slots) == 0) fileSlots_ = slots;
  }
  armAccept();
  armSignal();
}

void UringEchoLoop::target(io_uring_sqe* sqe, const Connection& conn, uint32_t index) {
  if (!conn.fixed) return;
  sqe->fd = static_cast<int>(index);
  sqe->flags |= IOSQE_FIXED_FILE;
}

UringEchoLoop::~UringEchoLoop() {
  // run() has drained what was in flight (or given up after its deadline);
  // the ring and buffer ring are members, so only the sockets are left.
  for (const auto& conn : connections_) {
    if (conn->fd >= 0) ::close(conn->fd);
  }
}

uint64_t UringEchoLoop::encode(Op op, uint32_t index, uint32_t generation) {
  return (static_cast<uint64_t>(op) << 56) |
         (static_cast<uint64_t>(generation & kGenerationMask) << 32) | index;
}

UringEchoLoop::Connection* UringEchoLoop::lookup(uint64_t userData) {
  const auto index = static_cast<uint32_t>(userData);
  const auto generation = static_cast<uint32_t>(userData >> 32) & kGenerationMask;
  if (index >= connections_.size()) return nullptr;
  Connection* conn = connections_[index].get();
  if (conn->fd < 0 || (conn->generation & kGenerationMask) != generation) return nullptr;
  return conn;
}

io_uring_sqe* UringEchoLoop::newSqe(uint64_t userData) {
  io_uring_sqe* sqe = ring_.getSqe();
  io_uring_sqe_set_data64(sqe, userData);
  ++inFlight_;
  return sqe;
}

void UringEchoLoop::run() {
  while (!stop_) {
    const int ret = io_uring_submit_and_wait(ring_.get(), 1);
    if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
      throw std::system_error(-ret, std::generic_category(), "io_uring_submit_and_wait");
    }
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(ring_.get(), head, cqe) {
      if (!(cqe->flags & IORING_CQE_F_MORE)) --inFlight_;
      handleCompletion(*cqe);
      ++seen;
    }
    io_uring_cq_advance(ring_.get(), seen);
    // Before the next submit, so that a recv re-armed after -ENOBUFS in this
    // turn finds the buffers returned in this turn.
    buffers_.publish();
  }
  drain();
}

void UringEchoLoop::drain() {
  // A request in flight holds a reference to its socket, and the kernel
  // tears a ring down asynchronously after the process exits: without this
  // the listener could stay bound for a moment after exit and a restarted
  // server would fail with EADDRINUSE.
  io_uring_sqe* sqe = newSqe(encode(Op::kCancel, 0, 0));
  io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (inFlight_ > 0 && std::chrono::steady_clock::now() < deadline) {
    __kernel_timespec wait{.tv_sec = 0, .tv_nsec = 100'000'000};
    io_uring_cqe* cqe = nullptr;
    const int ret = io_uring_submit_and_wait_timeout(ring_.get(), &cqe, 1, &wait, nullptr);
    if (ret < 0 && ret != -ETIME && ret != -EINTR) break;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(ring_.get(), head, cqe) {
      if (!(cqe->flags & IORING_CQE_F_MORE)) --inFlight_;
      ++seen;
    }
    io_uring_cq_advance(ring_.get(), seen);
  }
}

void UringEchoLoop::handleCompletion(const io_uring_cqe& cqe) {
  switch (static_cast<Op>(cqe.user_data >> 56)) {
    case Op::kAccept:
      onAccept(cqe);
      break;
    case Op::kRecv:
      onRecv(cqe);
      break;
    case Op::kSend:
      onSend(cqe);
      break;
    case Op::kSignal:
      stop_ = true;
      break;
    case Op::kCancel:
      break;  // the cancelled operation reports itself
  }
}

void UringEchoLoop::armAccept() {
  io_uring_sqe* sqe = newSqe(encode(Op::kAccept, 0, 0));
  io_uring_prep_multishot_accept(sqe, listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
  acceptArmed_ = true;
}

void UringEchoLoop::armSignal() {
  io_uring_sqe* sqe = newSqe(encode(Op::kSignal, 0, 0));
  io_uring_prep_poll_add(sqe, signalFd_, POLLIN);
}

void UringEchoLoop::onAccept(const io_uring_cqe& cqe) {
  if (cqe.res >= 0) {
    const int fd = cqe.res;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint32_t index;
    if (!freeSlots_.empty()) {
      index = freeSlots_.back();
      freeSlots_.pop_back();
    } else {
      index = static_cast<uint32_t>(connections_.size());
      connections_.push_back(std::make_unique<Connection>());
    }
    connections_[index]->fd = fd;
    connections_[index]->fixed =
        index < fileSlots_ && io_uring_register_files_update(ring_.get(), index, &fd, 1) == 1;
    armRecv(index);
  } else if (cqe.res == -EMFILE || cqe.res == -ENFILE || cqe.res == -ENOBUFS ||
             cqe.res == -ENOMEM) {
    // Re-arming now would fail again at once and spin; wait for a close.
    if (!acceptStarved_) std::fprintf(stderr, "accept: %s\n", std::strerror(-cqe.res));
    acceptStarved_ = true;
  }
  if (!(cqe.flags & IORING_CQE_F_MORE)) {
    acceptArmed_ = false;
    if (!acceptStarved_ && !stop_) armAccept();
  }
}

void UringEchoLoop::armRecv(uint32_t index) {
  Connection& conn = *connections_[index];
  io_uring_sqe* sqe = newSqe(encode(Op::kRecv, index, conn.generation));
  io_uring_prep_recv_multishot(sqe, conn.fd, nullptr, 0, 0);
  target(sqe, conn, index);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = buffers_.groupId();
  conn.recvArmed = true;
}

void UringEchoLoop::onRecv(const io_uring_cqe& cqe) {
  Connection* conn = lookup(cqe.user_data);
  const auto index = static_cast<uint32_t>(cqe.user_data);
  if (cqe.flags & IORING_CQE_F_BUFFER) {
    const unsigned bufferId = cqe.flags >> IORING_CQE_BUFFER_SHIFT;
    bool kept = false;
    if (conn != nullptr && cqe.res > 0 && !conn->closing) {
      kept = echo(index, bufferId, static_cast<size_t>(cqe.res));
    }
    if (!kept) buffers_.recycle(bufferId);  // even for a stale completion, or it leaks
  }
  if (conn == nullptr) return;
  const bool more = (cqe.flags & IORING_CQE_F_MORE) != 0;
  if (!more) conn->recvArmed = false;
  if (cqe.res == -ENOBUFS) buffers_.grow();
  if (cqe.res == 0) {
    startClose(index);  // EOF
  } else if (cqe.res < 0 && cqe.res != -ENOBUFS && cqe.res != -ECANCELED) {
    startClose(index);
  }
  // -ENOBUFS ends the multishot with the data still in the socket, and
  // -ECANCELED comes from a read pause; both just need a fresh recv.
  if (!more && !conn->closing && !conn->readPaused) armRecv(index);
  finishCloseIfIdle(index);
}

bool UringEchoLoop::echo(uint32_t index, unsigned bufferId, size_t n) {
  Connection& conn = *connections_[index];
  const char* data = buffers_.data(bufferId);
  // Only one send in flight per socket: two sends on one TCP socket may
  // complete out of order, which would reorder the echo.
  if (!conn.sendInFlight) {
    conn.sendOffset = 0;
    if (buffers_.canKeep()) {
      // Straight from the provided buffer, which stays out of the ring
      // until the send is done.
      buffers_.keep();
      conn.keptBuffer = static_cast<int>(bufferId);
      conn.keptLength = n;
      submitSend(index);
      return true;
    }
    conn.sending.assign(data, n);
    submitSend(index);
    return false;
  }
  conn.queued.append(data, n);
  if (conn.queued.size() > kMaxQueued && conn.recvArmed && !conn.readPaused) {
    conn.readPaused = true;
    io_uring_sqe* sqe = newSqe(encode(Op::kCancel, index, conn.generation));
    io_uring_prep_cancel64(sqe, encode(Op::kRecv, index, conn.generation), 0);
  }
  return false;
}

std::string_view UringEchoLoop::sendBytes(const Connection& conn) const {
  if (conn.keptBuffer >= 0) {
    return {buffers_.data(static_cast<unsigned>(conn.keptBuffer)), conn.keptLength};
  }
  return conn.sending;
}

void UringEchoLoop::giveBackKept(Connection& conn) {
  if (conn.keptBuffer < 0) return;
  buffers_.giveBack(static_cast<unsigned>(conn.keptBuffer));
  conn.keptBuffer = -1;
}

void UringEchoLoop::submitSend(uint32_t index) {
  Connection& conn = *connections_[index];
  io_uring_sqe* sqe = newSqe(encode(Op::kSend, index, conn.generation));
  const std::string_view bytes = sendBytes(conn);
  io_uring_prep_send(sqe, conn.fd, bytes.data() + conn.sendOffset, bytes.size() - conn.sendOffset,
                     MSG_NOSIGNAL);
  target(sqe, conn, index);
  conn.sendInFlight = true;
}

void UringEchoLoop::onSend(const io_uring_cqe& cqe) {
  Connection* conn = lookup(cqe.user_data);
  if (conn == nullptr) return;
  const auto index = static_cast<uint32_t>(cqe.user_data);
  conn->sendInFlight = false;
  if (cqe.res < 0) {
    startClose(index);
  } else if (!conn->closing) {
    conn->sendOffset += static_cast<size_t>(cqe.res);
    if (conn->sendOffset < sendBytes(*conn).size()) {
      submitSend(index);  // short send: the rest, before anything queued
    } else if (giveBackKept(*conn); !conn->queued.empty()) {
      std::swap(conn->sending, conn->queued);
      conn->queued.clear();
      conn->sendOffset = 0;
      submitSend(index);
    }
    if (conn->readPaused && conn->queued.empty()) {
      conn->readPaused = false;
      // Still armed means the cancel has not completed yet; its -ECANCELED
      // completion re-arms.
      if (!conn->recvArmed) armRecv(index);
    }
  }
  finishCloseIfIdle(index);
}

void UringEchoLoop::startClose(uint32_t index) {
  Connection& conn = *connections_[index];
  if (conn.closing) return;
  conn.closing = true;
  if (conn.recvArmed || conn.sendInFlight) {
    // The fd may only be closed once the kernel is done with it; cancel what
    // is outstanding and close when the last completion arrives.
    io_uring_sqe* sqe = newSqe(encode(Op::kCancel, index, conn.generation));
    if (conn.fixed) {
      io_uring_prep_cancel_fd(sqe, index, IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD_FIXED);
    } else {
      io_uring_prep_cancel_fd(sqe, conn.fd, IORING_ASYNC_CANCEL_ALL);
    }
  }
}

void UringEchoLoop::finishCloseIfIdle(uint32_t index) {
  Connection& conn = *connections_[index];
  if (!conn.closing || conn.recvArmed || conn.sendInFlight) return;
  giveBackKept(conn);
  if (conn.fixed) {
    // The table's reference would keep the socket open past close().
    const int none = -1;
    io_uring_register_files_update(ring_.get(), index, &none, 1);
    conn.fixed = false;
  }
  ::close(conn.fd);
  conn.fd = -1;
  ++conn.generation;
  conn.closing = false;
  conn.readPaused = false;
  conn.sending = std::string();
  conn.queued = std::string();
  conn.sendOffset = 0;
  freeSlots_.push_back(index);
  if (acceptStarved_) {
    acceptStarved_ = false;
    if (!acceptArmed_ && !stop_) armAccept();
  }
}

}  // namespace pingpong
