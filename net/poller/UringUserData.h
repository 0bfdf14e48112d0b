// UringUserData: the encoding of an io_uring operation's user_data, used by
// everything that submits (UringPoller, UringContext, the strategies, the
// registered-file table and UringRing) and by UringPoller to route each
// completion back. Never a pointer: the top byte says what the operation is
// (UringOp), and below it a token names its owner by slot and generation,
// so that a completion that outlives its owner is recognised as stale.
// Free of liburing; any thread (pure functions).
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

// A token names one registration of an owner (a channel's poll, a completion
// handler, an fd receiver: UringContext's registry): its slot in the low 32
// bits, the slot's generation above them. The generation has 24 bits, so
// that the token fits below the op byte; it changes whenever the slot is
// freed (and when a channel's poll is cancelled), so ops still in flight for
// the old owner read as stale.
inline constexpr uint32_t kUringGenerationMask = 0xFFFFFF;

[[nodiscard]] inline uint64_t uringToken(uint32_t slot, uint32_t generation) {
  return (static_cast<uint64_t>(generation & kUringGenerationMask) << 32) | slot;
}

// An operation's user_data: its kind in the top byte, and below it a token:
// for a channel's poll or a handler's op, its owner's token (uringToken());
// for the file table's ops, the table's slot index; 0 for kIgnore.
[[nodiscard]] inline uint64_t completionUserData(UringOp op, uint64_t token) {
  return (static_cast<uint64_t>(op) << 56) | token;
}
[[nodiscard]] inline UringOp opOf(uint64_t userData) {
  return static_cast<UringOp>(userData >> 56);
}
// The slot of a token or of a user_data carrying one.
[[nodiscard]] inline uint32_t slotOf(uint64_t userData) {
  return static_cast<uint32_t>(userData & 0xFFFFFFFF);
}
// The generation of a token or of a user_data carrying one.
[[nodiscard]] inline uint32_t generationOf(uint64_t userData) {
  return static_cast<uint32_t>((userData >> 32) & kUringGenerationMask);
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

}  // namespace libnet
