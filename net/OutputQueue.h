// OutputQueue: the bytes a connection has yet to write, in order. First the
// bytes of a send in flight (io_uring: they must stay put until it
// completes), then the bytes waiting, then files queued by sendFile(), each
// followed by the bytes queued after it. Each backend's connection strategy
// (net/poller/) owns one and moves bytes out of it (the sendfile(2) of a
// queued file included: net/poller/SendFile.h); the ordering rules and the
// byte counts (high-water mark, back-pressure, queuedOutputBytes()) exist
// once, here. Buffer storage is borrowed from the loop's BufferPool while it
// holds bytes and given back when empty.
//
// Owned by a connection's I/O strategy; loop thread only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <list>
#include <memory>
#include <string_view>

#include "base/UniqueFd.h"
#include "net/Buffer.h"

namespace libnet {

class BufferPool;

class OutputQueue {
 public:
  explicit OutputQueue(BufferPool* pool) : pool_(pool) {}
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;

  // After everything queued.
  void append(std::string_view data);
  // All of `buffer`'s bytes, after everything queued, leaving it empty. When
  // nothing is queued its storage (or the bytes it views) is taken instead of
  // copied, and `buffer` gets the queue's empty storage, or spare storage
  // from the pool if `lendBack` (a buffer its owner will fill again soon).
  void append(Buffer* buffer, bool lendBack);
  // `length` bytes of `file` from `offset`, after everything queued; the
  // queue owns the fd until the file is sent or the queue cleared.
  void appendFile(UniqueFd file, off_t offset, size_t length);
  // The same, with `head`'s bytes (emptied) right before the file.
  void appendFile(UniqueFd file, off_t offset, size_t length, Buffer* head);

  // The bytes to write next (none of them in flight), ahead of any file.
  [[nodiscard]] Buffer& waiting() { return waiting_; }
  [[nodiscard]] bool hasFile() const { return files_ && !files_->empty(); }

  // A file range still to send, and the bytes queued after it.
  struct File {
    UniqueFd fd;
    off_t offset;
    size_t remaining;
    Buffer after{0};
  };
  // The first file (hasFile()): its sender advances offset and remaining.
  [[nodiscard]] File& firstFile() { return files_->front(); }
  // The first file is all sent: the bytes queued after it become waiting().
  void fileSent();

  // io_uring's one send in flight: its bytes, untouched until it completes.
  [[nodiscard]] Buffer& inFlight() { return inFlight_; }
  // Moves the waiting bytes into the (empty) in-flight buffer, without
  // copying; false if none are waiting.
  bool startSend();
  // A send took `bytes` of the in-flight buffer.
  void sent(size_t bytes);
  // Hands back memory the queue views but does not own (received bytes
  // queued without a copy): the connection is gone and nothing will be sent.
  void releaseViews();

  // Bytes in buffers: the memory the queue holds for the peer.
  [[nodiscard]] size_t bufferedBytes() const;
  // Everything still to write: buffered bytes and file bytes.
  [[nodiscard]] size_t queuedBytes() const;
  [[nodiscard]] bool empty() const {
    return inFlight_.readableBytes() == 0 && waiting_.readableBytes() == 0 && !hasFile();
  }
  // Storage held (capacity, not content).
  [[nodiscard]] size_t capacity() const;

  // Gives the storage of empty buffers back to the pool. Not while a send is
  // in flight.
  void reclaim();
  // The connection is closed and no send reads the buffers any more: what
  // they hold is dropped and their storage goes to the pool, whatever its
  // size (BufferPool::recycle).
  void recycle();
  // Drops what is not in flight (closing the files): the connection closed.
  void clear();

 private:
  // Sent bytes of the in-flight buffer worth a madvise call.
  static constexpr size_t kReleaseStep = 256 * 1024;

  // Where appended bytes go: behind the last file, or waiting.
  Buffer& tail() { return hasFile() ? files_->back().after : waiting_; }

  BufferPool* pool_;
  Buffer inFlight_{0};
  Buffer waiting_{0};
  // Made when the first file is queued: most connections never send one,
  // and every connection carries this queue (8 bytes, not a list's 24). A
  // list, not a deque: a deque allocates even when empty.
  std::unique_ptr<std::list<File>> files_;
  size_t inFlightReleased_ = 0;  // Buffer::releaseSpentPages() of inFlight_
};

}  // namespace libnet
