// CompletionHandler: what an owner of io_uring operations implements to
// receive their completions from the UringPoller of its loop: the io_uring
// I/O strategies (UringConnectionIo, UringAcceptorIo). Also the encoding of
// an operation's user_data, shared by the poller and the registered-file
// table. Free of liburing. Called on the loop thread only.
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

// An operation's user_data: its kind in the top byte, and its owner's token
// (slot and generation, UringPoller::registerHandler) below: never a pointer,
// so a completion that outlives its owner is recognised as stale.
[[nodiscard]] inline uint64_t completionUserData(UringOp op, uint64_t token) {
  return (static_cast<uint64_t>(op) << 56) | token;
}

class CompletionHandler {
 public:
  // `res` and `flags` are the CQE's (res < 0 is -errno).
  virtual void onCompletion(UringOp op, int32_t res, uint32_t flags) = 0;

 protected:
  ~CompletionHandler() = default;
};

}  // namespace libnet
