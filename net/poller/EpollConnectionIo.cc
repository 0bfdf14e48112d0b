#include "net/poller/EpollConnectionIo.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/EventLoopBase.h"
#include "net/LoopInternals.h"
#include "net/OutputQueue.h"
#include "net/Socket.h"
#include "net/poller/SendFile.h"

namespace libnet {

EpollConnectionIo::EpollConnectionIo(EventLoopBase* loop, const Parts& parts)
    : owner_(parts.owner), output_(&LoopInternals::bufferPool(*loop)), channel_(loop, parts.fd) {
  channel_.setReadCallback([this](Timestamp t) {
    // A FIN that was already queued when epoll reported the edge brings no
    // new edge: with EPOLLRDHUP set, read on past a short read to see it.
    handleRead(t, (channel_.returnedEvents() & EPOLLRDHUP) == 0);
  });
  channel_.setWriteCallback([this] { handleWrite(); });
  // A hang-up with nothing left to read: the peer is gone both ways.
  channel_.setCloseCallback([this] {
    if (!closed_) owner_->onIoError("hang-up", ECONNRESET);
  });
  channel_.setErrorCallback([this] { handleError(); });
}

void EpollConnectionIo::start() {
  // The channel's callbacks run only while the connection lives (a late
  // event after it is gone is dropped).
  channel_.tie(owner_->keepAlive());
  channel_.enableReadWrite();
}

void EpollConnectionIo::resumeRead() {
  // An edge may have come and gone while paused: look once.
  handleRead(Timestamp::now(), false);
}

int EpollConnectionIo::write(std::string_view data) {
  size_t written = 0;
  // Straight to the socket only if nothing is queued, or bytes would reorder.
  if (output_.empty() && !data.empty()) {
    ssize_t n;
    do {
      n = ::send(channel_.fd(), data.data(), data.size(), MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) {
      written = static_cast<size_t>(n);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return errno;
    }
  }
  // The rest waits for the socket's next writable edge: interest is
  // registered for good, nothing to arm.
  output_.append(data.substr(written));
  return 0;
}

int EpollConnectionIo::write(Buffer* buffer, InputKind) {
  // The caller's buffer is usually the loop's scratch buffer: copy what the
  // socket does not take at once rather than take its storage.
  const int err = write(buffer->view());
  buffer->retrieveAll();
  return err;
}

void EpollConnectionIo::close() {
  // Interest stays registered (an epoll_ctl saved): every handler checks
  // closed_ first, and with edge-triggered delivery a closed connection's
  // socket reports at most an edge or two until release() closes it.
  closed_ = true;
  output_.clear();  // closes queued files
}

void EpollConnectionIo::release() {
  closed_ = true;
  // The fd is closed right below and nothing else refers to its socket
  // (accepted close-on-exec, never duplicated): closing it takes it out of
  // the epoll set, so no EPOLL_CTL_DEL first.
  channel_.removeBeforeClose();
  owner_->onReleased().reset();  // nothing is ever in flight here
}

// The connection outlives both handlers while they run: the Channel's tie
// holds it during an event, and the functors that call them (resumeRead,
// flush, the re-queued read below) hold it too.
void EpollConnectionIo::handleRead(Timestamp receiveTime, bool shortReadDrains) {
  if (closed_ || !owner_->wantsInput()) return;
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    // Into the loop's shared scratch buffer, which stays in cache, rather
    // than into a buffer of this connection's (with 1000 connections, their
    // buffers are megabytes of cold memory): the owner keeps what it keeps.
    // It empties the buffer after every delivery; emptying it here as well
    // costs two stores and makes sure no connection ever reads another's
    // bytes, whatever went wrong before.
    Buffer* buffer = LoopInternals::scratchBuffer(*channel_.loop());
    buffer->retrieveAll();
    const Buffer::ReadResult result = buffer->readFd(channel_.fd());
    if (result.bytes > 0) {
      owner_->onInput(buffer, InputKind::kTransient, receiveTime);
      if (closed_ || !owner_->wantsInput()) return;
      // A short read means the socket is drained, unless the edge said more
      // (a FIN) is waiting behind the data or we are resuming without an edge.
      if (!result.filled && shortReadDrains) return;
      continue;
    }
    if (result.bytes == 0) {
      owner_->onPeerClosed();
      return;
    }
    if (result.error == EAGAIN || result.error == EWOULDBLOCK) return;
    if (result.error == EINTR) continue;
    owner_->onIoError("read", result.error);
    return;
  }
  // Still more to read: let the other ready channels have a turn first.
  channel_.loop()->queueInLoop(
      [this, guard = owner_->keepAlive(), receiveTime] { handleRead(receiveTime, false); });
}

void EpollConnectionIo::handleWrite() {
  // A writable edge with nothing queued (it also comes with read edges): no-op.
  if (closed_ || output_.empty()) return;
  bool progressed = false;
  const WriteResult result = writeQueued(&progressed);
  if (result == WriteResult::kFailed) return;
  if (progressed) owner_->onOutputProgress();
  if (result == WriteResult::kDrained && !closed_) {
    // An idle connection keeps small buffers only; the storage of a burst
    // goes back to the loop's pool (or, if huge, to the allocator).
    output_.reclaim();
    owner_->onOutputDrained();
  }
}

EpollConnectionIo::WriteResult EpollConnectionIo::writeQueued(bool* progressed) {
  for (;;) {
    Buffer& waiting = output_.waiting();
    while (waiting.readableBytes() > 0) {
      // Bytes just ahead of a file (an HTTP head) wait for its first segment
      // instead of leaving in a small packet of their own.
      const int flags = MSG_NOSIGNAL | (output_.hasFile() ? MSG_MORE : 0);
      const ssize_t n = ::send(channel_.fd(), waiting.peek(), waiting.readableBytes(), flags);
      if (n > 0) {
        waiting.retrieve(static_cast<size_t>(n));
        *progressed = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return WriteResult::kBlocked;
      owner_->onIoError("send", errno);
      return WriteResult::kFailed;
    }
    if (!output_.hasFile()) return WriteResult::kDrained;
    const FileSendResult file = sendQueuedFile(&output_, channel_.fd(), progressed);
    if (file.status == FileSendResult::kBlocked) return WriteResult::kBlocked;
    if (file.status == FileSendResult::kFailed) {
      owner_->onIoError(file.call, file.error);
      return WriteResult::kFailed;
    }
  }
}

void EpollConnectionIo::handleError() {
  if (closed_) return;
  const int err = Socket::getSocketError(channel_.fd());
  if (err == 0) return;
  // A pending error on a connected TCP socket is fatal to it (reset,
  // timeout, unreachable); with edge-triggered polling it would not be
  // reported again.
  owner_->onIoError("socket", err);
}

}  // namespace libnet
