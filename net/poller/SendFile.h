// sendQueuedFile(): the sendfile(2) of the first file in an OutputQueue, for
// the connection strategies that send it (epoll and io_uring alike: io_uring
// has no sendfile op, and its splice would take a pipe per connection).
// Loop thread only.
#pragma once

namespace libnet {

class OutputQueue;

struct FileSendResult {
  enum Status { kDone, kBlocked, kFailed } status;
  int error;         // kFailed: errno (ENODATA: the file ended early)
  const char* call;  // kFailed: what failed, for the log line
};

// Sends the queue's first file (OutputQueue::hasFile()) to the non-blocking
// `socketFd` until it is all sent (kDone: the bytes queued after it become
// waiting()) or the socket is full (kBlocked). `*progressed` is set if any
// byte went. A reset peer makes sendfile(2) raise SIGPIPE, which has no
// MSG_NOSIGNAL: it is blocked for this thread during the call and a SIGPIPE
// raised by it taken back, so the process's signal disposition is left alone.
[[nodiscard]] FileSendResult sendQueuedFile(OutputQueue* queue, int socketFd, bool* progressed);

}  // namespace libnet
