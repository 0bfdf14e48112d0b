// EpollConnectionIo: a connection's I/O on an epoll loop. Its Channel is
// registered once for EPOLLIN|EPOLLOUT|EPOLLRDHUP, edge-triggered, and never
// modified (toggling EPOLLOUT per backlogged write would cost two epoll_ctl
// calls; with EPOLLET a writable edge just comes when the kernel frees send
// space, and one with nothing queued is a cheap no-op).
//
// Reads: on each readable edge, read until a read comes back short (it
// proves the socket empty without the read that would say EAGAIN), up to a
// fairness cap, after which reading resumes at the end of the loop
// iteration. The bytes go to the loop's scratch buffer, which stays in
// cache, and are handed up from there: the connection keeps what it keeps in
// its own buffer. Writes: straight to the socket when nothing is queued; the
// rest waits in this strategy's OutputQueue for writable edges; files go out
// with sendfile(2).
//
// Owned by its TcpConnection (under TLS, by its TlsConnectionIo); made on the
// thread that creates the connection, loop thread only from start() on.
#pragma once

#include "net/Channel.h"
#include "net/ConnectionIo.h"
#include "net/OutputQueue.h"

namespace libnet {

class EventLoopBase;

class EpollConnectionIo final : public ConnectionIo {
 public:
  EpollConnectionIo(EventLoopBase* loop, const Parts& parts);

  void start() override;
  void pauseRead() override {}  // the read handler asks Owner::wantsInput()
  void resumeRead() override;
  [[nodiscard]] int write(std::string_view data) override;
  [[nodiscard]] int write(Buffer* buffer, InputKind kind) override;
  void queueFile(UniqueFd file, off_t offset, size_t length, Buffer* head) override {
    output_.appendFile(std::move(file), offset, length, head);
  }
  void flush() override { handleWrite(); }
  [[nodiscard]] size_t bufferedOutput() const override { return output_.bufferedBytes(); }
  [[nodiscard]] size_t queuedOutput() const override { return output_.queuedBytes(); }
  [[nodiscard]] bool outputDrained() const override { return output_.empty(); }
  [[nodiscard]] size_t outputCapacity() const override { return output_.capacity(); }
  void close() override;
  void release() override;

 private:
  static constexpr int kMaxReadsPerEvent = 16;

  // shortReadDrains: a read that returns less than offered proves the socket
  // empty.
  void handleRead(Timestamp receiveTime, bool shortReadDrains);
  void handleWrite();
  void handleError();
  enum class WriteResult { kDrained, kBlocked, kFailed };
  // Writes the queue until it is empty or the socket is full.
  WriteResult writeQueued(bool* progressed);

  // Every connection of an epoll loop carries one, in its room
  // (ConnectionIo::Room): the loop and the fd are the Channel's.
  Owner* owner_;
  OutputQueue output_;
  Channel channel_;
  bool closed_ = false;
};

}  // namespace libnet
