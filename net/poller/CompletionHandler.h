// CompletionHandler: what an owner of io_uring operations implements to
// receive their completions from the UringPoller of its loop: the io_uring
// I/O strategies (UringConnectionIo, UringAcceptorIo), each registered with
// the poller for a token. Also the encoding of an operation's user_data,
// used by everything that submits (the poller, the strategies, the
// registered-file table and UringRing). Free of liburing. Called on the loop
// thread only.
#pragma once

#include <cstdint>

namespace libnet {

// The kind of operation a completion belongs to (the top byte of user_data).
// kWritable: a one-shot POLLOUT wait of a connection sending a file with
// sendfile(2). kPoll is the poller's own, for channels. kFileRegistered and
// kFileClosed: a slot of the registered-file table filled or emptied
// (UringFileTable's ops, whose completions the poller handles itself).
// kIgnore: an op whose completion nobody needs (cancels, poll removals,
// closes). kFdPosted: an fd another loop posted to this ring (a message,
// IORING_OP_MSG_RING: res is the fd), for a receiver registered like a
// handler (UringPoller::addFdReceiver). kFdPost: this ring's own completion
// of such a post, which comes only when the post failed (or, on kernels
// without IOSQE_CQE_SKIP_SUCCESS, also when it worked); its user_data is
// postUserData(), not a token, so that the fd comes back with the failure.
enum class UringOp : uint8_t {
  kPoll = 1,
  kRecv,
  kSend,
  kAccept,
  kIgnore,
  kWritable,
  kFileClosed,
  kFileRegistered,
  kFdPosted,
  kFdPost,
};

// An operation's user_data: its kind in the top byte, and below it a token:
// for a channel's poll or a handler's op, its owner's slot and generation
// (UringPoller::registerHandler), so that a completion that outlives its
// owner is recognised as stale; for the file table's ops, the table's slot
// index; 0 for kIgnore. Never a pointer.
[[nodiscard]] inline uint64_t completionUserData(UringOp op, uint64_t token) {
  return (static_cast<uint64_t>(op) << 56) | token;
}

// The user_data of an fd post on the posting ring: kFdPost in the top byte,
// the route (UringPoller's index of the target ring, 24 bits) below it, and
// the fd in the low 32 bits. A post that fails comes back with it, and the
// fd is closed, with nothing to look up that could have gone meanwhile.
[[nodiscard]] inline uint64_t postUserData(uint32_t route, int fd) {
  return (static_cast<uint64_t>(UringOp::kFdPost) << 56) |
         (static_cast<uint64_t>(route & 0xFFFFFF) << 32) | static_cast<uint32_t>(fd);
}
[[nodiscard]] inline uint32_t routeOfPost(uint64_t userData) {
  return static_cast<uint32_t>((userData >> 32) & 0xFFFFFF);
}
[[nodiscard]] inline int fdOfPost(uint64_t userData) {
  return static_cast<int>(static_cast<uint32_t>(userData));
}

class CompletionHandler {
 public:
  // `res` and `flags` are the CQE's (res < 0 is -errno).
  virtual void onCompletion(UringOp op, int32_t res, uint32_t flags) = 0;
  // The end of the loop turn the handler asked for it in
  // (UringPoller::atTurnEnd): the handler submits what it put off.
  virtual void onTurnEnd() {}

 protected:
  ~CompletionHandler() = default;
};

}  // namespace libnet
