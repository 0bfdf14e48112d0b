// UringPoller: the Poller backend on io_uring: it routes each completion of
// its ring to the Channel, the completion handler or the fd receiver it
// belongs to, handles those of the registered-file table itself, and keeps
// the channels' polls armed. What the loop's io_uring parts share (the ring,
// the registered-file table, the provided buffers, the registry of owners)
// is its UringContext, which its connection and acceptor strategies
// (UringConnectionIo, UringAcceptorIo) submit through; they know the
// context, not the poller, and are made by the backend's factory
// (PollerFactory.cc). Whether io_uring runs here at all is UringProbe.
//
// Readiness (Channels: timerfd, eventfd, connecting sockets, user fds): one
// multishot POLL_ADD per Channel, re-armed when a completion comes without
// IORING_CQE_F_MORE. Like EPOLLET, a channel is reported when its fd becomes
// ready, and its handler drains it.
//
// Completions (Handlers): an owner registers itself with the context and gets
// a token; the ops it submits carry user_data = {op, slot, generation}
// (UringUserData.h), never a pointer, so a completion that arrives after its
// owner unregistered is recognised by its stale generation and dropped (a
// provided buffer it holds is recycled, an fd it carries is closed). A connection's strategy keeps
// its connection, and so itself, alive while it has ops in flight, and unregisters after the last
// one; an acceptor's cancels its accept and unregisters when destroyed.
//
// Fds posted between loops (Poller::postFd): the posting ring submits an
// IORING_OP_MSG_RING (IORING_MSG_DATA) naming the target's ring, whose
// completion there carries the fd as its res and {kFdPosted, receiver's slot
// and generation} as its user_data; the receiver is registered like a
// handler, so a post that arrives after it left is stale and its fd closed.
// The posting ring's own completion is skipped on success
// (IOSQE_CQE_SKIP_SUCCESS where the kernel has it); a failure (the target's
// CQ full and its overflow list out of memory, the target ring gone, ...)
// comes back with the route and the fd in its user_data (postUserData()), and
// the fd is closed here. Each ring has an Inbox shared with the rings that
// post to it, counting posts made and posts settled (arrived there, or
// failed and closed here): a loop being destroyed turns its poller until
// every post counted has arrived (ownersInFlight()), so none lands in a ring
// nobody reads.
//
// One io_uring_submit_and_wait_timeout() per loop turn: SQEs prepared during
// callbacks go out with the next turn. Completions are copied out of the CQ in
// poll() and dispatched by dispatchCompletions(), which the loop calls with
// the channel events, so handlers run in the same phase as channel callbacks.
//
// The ring is created and used only on the loop's thread (with SINGLE_ISSUER
// where the probe found it and SQPOLL is off: UringProbe,
// UringRing::setupFlags()).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "net/EventLoopOptions.h"
#include "net/Poller.h"
#include "net/poller/UringContext.h"

namespace libnet {

class UringPoller final : public Poller {
 public:
  // Throws std::system_error if io_uring cannot run here (UringProbe) or
  // this loop's ring or buffer ring cannot be built (UringContext).
  UringPoller(EventLoopBase* loop, const IoUringOptions& options);
  ~UringPoller() override;

  Timestamp poll(Duration timeout, ChannelList* active) override;
  void dispatchCompletions() override;
  void beforeWait() override { context_.runTurnEnd(); }
  void updateChannel(Channel* channel) override;
  void removeChannel(Channel* channel) override;
  [[nodiscard]] size_t ownersInFlight() const override;
  [[nodiscard]] PollerKind kind() const override { return PollerKind::kIoUring; }
  [[nodiscard]] uint64_t addFdReceiver(FdReceiver* receiver) override;
  void removeFdReceiver(uint64_t token) override;
  [[nodiscard]] bool canPostTo(const Poller& target) const override;
  void postFd(Poller& target, uint64_t token, UniqueFd fd) override;
  void flushPosts() override { context_.ring().submit(); }

  // What this loop's strategies share (loop thread only).
  [[nodiscard]] UringContext& context() { return context_; }
  // Posts of this ring that the kernel refused (their fds closed here).
  [[nodiscard]] uint64_t failedPosts() const { return failedPosts_; }
  // Tests only, loop thread: the next `count` posts name an fd that is no
  // ring (-1), so that the kernel fails them as it would a post to a ring
  // that has gone.
  void failPostsForTesting(int count) { failPostsForTesting_ = count; }

 private:
  // What a ring that receives posts shares with the rings posting to it.
  struct Inbox {
    explicit Inbox(int fd) : ringFd(fd) {}
    const int ringFd;
    // Counted by the posting loops before each post, and settled by this
    // loop when the post arrives, or by the posting loop when it fails: the
    // difference is what is still on its way here.
    std::atomic<uint64_t> posted{0};
    std::atomic<uint64_t> settled{0};
    // Set when this ring goes: a route to it may then be reused.
    std::atomic<bool> closed{false};
  };
  // A channel's multishot poll, by its slot in the context's registry.
  struct ChannelPoll {
    uint32_t armedMask = 0;
    bool armed = false;
    uint64_t activeTurn = 0;  // the turn it was last put in the active list
  };
  struct Completion {
    uint64_t userData;
    int32_t res;
    uint32_t flags;
  };

  void armPoll(uint32_t slot, Channel* channel);
  void cancelPoll(uint32_t slot);
  void dropStale(const Completion& c);
  // Copies the ready completions out of the CQ: channel events into
  // `active`, the rest into completions_ for dispatchCompletions().
  void collectCompletions(ChannelList* active);
  // One multishot-poll completion of a channel's slot.
  void onPollCompletion(const Completion& c, ChannelList* active);
  // Polls to arm again.
  void afterCollect();
  // The buffer ring's periodic shrink (IoUringOptions::bufferCheckMs).
  void shrinkBuffersIfDue();
  // A post of this ring came back (failed, or succeeded on a kernel that
  // cannot skip that completion).
  void onPostCompletion(const Completion& c);
  // The index in routes_ of `inbox`, added if new.
  uint32_t routeTo(const std::shared_ptr<Inbox>& inbox);
  // Hands an arrived post to its receiver, or closes it.
  void deliverPosted(const Completion& c);
  // Destruction: gives back what the completions not yet handled hold.
  void dropUnhandled();

  UringContext context_;  // first: destroyed last
  Timestamp lastRingCheck_;
  Timestamp lastPollTime_;
  Duration ringCheckInterval_;
  std::vector<ChannelPoll> polls_;  // by registry slot; only channels' are used
  std::vector<Completion> completions_;
  std::vector<uint32_t> rearm_;
  // Fd posts (Poller::postFd).
  const std::shared_ptr<Inbox> inbox_;          // this ring's, for loops posting here
  std::vector<std::shared_ptr<Inbox>> routes_;  // rings this one posted to, by route
  const bool canPost_;                          // MSG_RING, and not SQPOLL
  const unsigned postSqeFlags_;                 // IOSQE_CQE_SKIP_SUCCESS where known
  uint64_t failedPosts_ = 0;
  int failPostsForTesting_ = 0;
};

}  // namespace libnet
