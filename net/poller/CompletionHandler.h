// CompletionHandler: what an owner of io_uring operations (TcpConnection,
// Acceptor) implements to receive their completions from the UringPoller of
// its loop. Kept apart from UringPoller.h so that public headers do not pull
// in liburing. Called on the loop thread only.
#pragma once

#include <cstdint>

namespace libnet {

// The kind of operation a completion belongs to (the top byte of user_data).
// kWritable: a one-shot POLLOUT wait of a connection sending a file with
// sendfile(2) (kPoll is the poller's own, for channels). kFileClosed: a
// connection's registered-file slot emptied (the poller's own).
enum class UringOp : uint8_t {
  kPoll = 1,
  kRecv,
  kSend,
  kAccept,
  kIgnore,
  kWritable,
  kFileClosed,
  kFileRegistered,
};

class CompletionHandler {
 public:
  // `res` and `flags` are the CQE's (res < 0 is -errno).
  virtual void onCompletion(UringOp op, int32_t res, uint32_t flags) = 0;

 protected:
  ~CompletionHandler() = default;
};

}  // namespace libnet
