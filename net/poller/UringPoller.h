// UringPoller: the Poller backend on io_uring: it routes each completion of
// its ring to the Channel or the completion handler it belongs to, and
// handles those of the registered-file table itself. Its
// connection and acceptor strategies (UringConnectionIo, UringAcceptorIo)
// submit through it. The ring itself is UringRing, the registered-file table
// UringFileTable, the provided buffers BufferRing, and whether io_uring runs
// here at all UringProbe.
//
// Readiness (Channels: timerfd, eventfd, connecting sockets, user fds): one
// multishot POLL_ADD per Channel, re-armed when a completion comes without
// IORING_CQE_F_MORE. Like EPOLLET, a channel is reported when its fd becomes
// ready, and its handler drains it.
//
// Completions (Handlers): an owner registers itself and gets a token; the ops
// it submits carry user_data = {op, slot, generation}, never a pointer, so a
// completion that arrives after its owner unregistered is recognised by its
// stale generation and dropped (a provided buffer it holds is recycled, an fd
// it carries is closed). A connection's strategy keeps its connection, and so
// itself, alive while it has ops in flight, and unregisters after the last
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
// The ring is created (SINGLE_ISSUER) and used only on the loop's thread.
#pragma once

#include <liburing.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "net/Buffer.h"
#include "net/EventLoopOptions.h"
#include "net/Poller.h"
#include "net/poller/BufferRing.h"
#include "net/poller/CompletionHandler.h"
#include "net/poller/UringFileTable.h"
#include "net/poller/UringRing.h"

namespace libnet {

class UringPoller final : public Poller {
 public:
  using Op = UringOp;
  using Handler = CompletionHandler;
  static constexpr Op kPoll = UringOp::kPoll;
  static constexpr Op kRecv = UringOp::kRecv;
  static constexpr Op kSend = UringOp::kSend;
  static constexpr Op kAccept = UringOp::kAccept;
  static constexpr Op kIgnore = UringOp::kIgnore;

  // Throws std::system_error if io_uring cannot run here (UringProbe) or
  // this loop's ring or buffer ring cannot be built (UringRing, BufferRing).
  UringPoller(EventLoopBase* loop, const IoUringOptions& options);
  ~UringPoller() override;

  Timestamp poll(Duration timeout, ChannelList* active) override;
  void dispatchCompletions() override;
  void beforeWait() override;
  void updateChannel(Channel* channel) override;
  void removeChannel(Channel* channel) override;
  [[nodiscard]] ConnectionIo::Ptr newConnectionIo(const ConnectionIo::Parts& parts) override;
  [[nodiscard]] std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner,
                                                          int listenFd) override;
  [[nodiscard]] size_t ownersInFlight() const override;
  [[nodiscard]] PollerKind kind() const override { return PollerKind::kIoUring; }
  [[nodiscard]] uint64_t addFdReceiver(FdReceiver* receiver) override;
  void removeFdReceiver(uint64_t token) override;
  [[nodiscard]] bool canPostTo(const Poller& target) const override;
  void postFd(Poller& target, uint64_t token, UniqueFd fd) override;
  void flushPosts() override { ring_.submit(); }

  // Completion interface (loop thread only).
  [[nodiscard]] uint64_t registerHandler(Handler* handler);
  void unregisterHandler(uint64_t token);
  // Calls the handler's onTurnEnd() once this loop turn's callbacks and
  // functors have run, before the wait (unless it has unregistered by then).
  void atTurnEnd(uint64_t token) { turnEnd_.push_back(token); }
  // From onTurnEnd(): once more at the end of the next turn, whose poll
  // then does not wait.
  void atNextTurnEnd(uint64_t token) { nextTurnEnd_.push_back(token); }
  // An SQE to fill (UringRing::getSqe).
  [[nodiscard]] io_uring_sqe* getSqe() { return ring_.getSqe(); }
  [[nodiscard]] BufferRing& buffers() { return *buffers_; }
  // A receive found the buffer ring empty: it grows (BufferRing::grow), at
  // most once a loop turn: every receive of the turn that found it empty
  // asked, and doubling once for each took it from 64 to 2048 buffers at
  // the first burst.
  void growBuffers() {
    if (grewInTurn_ == turn_) return;
    grewInTurn_ = turn_;
    buffers_->grow();
  }
  // What one arming of a backlogged connection's recv may take
  // (UringConnectionIo::armRecv), counting it: the backlogged armings of a
  // turn share the ring's initial buffers (1 MiB by default), each getting
  // kBackloggedShareMin to kBackloggedShareMax. Their bytes arrive in the
  // same kernel pass, all in provided buffers at once, and the ring would
  // grow to hold them; the rest waits in the sockets, as it does on epoll.
  // Shared by the count of the last turn (or this one's, if more). The
  // floor is two 16 KiB messages, so that a peer that sends one and waits
  // for the answer takes at most half an arming in a turn, and is soon seen
  // not to be backlogged.
  static constexpr size_t kBackloggedShareMax = 64 * 1024;
  static constexpr size_t kBackloggedShareMin = 32 * 1024;
  [[nodiscard]] size_t backloggedShare() {
    const size_t sharers = std::max(backloggedArms_[0], backloggedArms_[1]) + 1;
    ++backloggedArms_[turn_ & 1];
    const size_t bufferSize = buffers_->bufferSize();
    return std::clamp(buffers_->initial() * bufferSize / sharers, kBackloggedShareMin,
                      kBackloggedShareMax);
  }
  // Loop turns so far (poll() calls): completions of one turn were received
  // in the same kernel pass.
  [[nodiscard]] uint64_t turn() const { return turn_; }
  // The ring's registered-file table (UringFileTable::add / remove).
  [[nodiscard]] int registerFile(int fd) { return files_.add(fd); }
  void unregisterFile(int index) { files_.remove(index); }
  // Closes `fd` through the ring with the next submit (UringRing::closeFile).
  void closeFile(UniqueFd fd) { ring_.closeFile(std::move(fd)); }
  [[nodiscard]] uint32_t fileSlots() const { return files_.slots(); }
  [[nodiscard]] size_t filesRegistered() const { return files_.used(); }
  // The Buffer a message callback gets when it is handed received bytes in
  // place (UringConnectionIo): one per loop, viewing a provided buffer only
  // for the length of one callback, so a connection carries none.
  [[nodiscard]] Buffer& receivedView() { return receivedView_; }
  // Whether a multishot recv can be limited to a total number of bytes
  // (UringProbe::Result::boundedMultishotRecv, unless the options said no).
  [[nodiscard]] bool boundedMultishotRecv() const { return boundedMultishotRecv_; }
  // The IORING_SETUP_* flags chosen for the ring (UringRing::setupFlags).
  [[nodiscard]] unsigned setupFlags() const { return ring_.setupFlags(); }
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
  struct Slot {
    Channel* channel = nullptr;
    Handler* handler = nullptr;
    FdReceiver* receiver = nullptr;
    uint32_t generation = 0;
    uint32_t armedMask = 0;
    bool pollArmed = false;
    uint64_t activeTurn = 0;
  };
  struct Completion {
    uint64_t userData;
    int32_t res;
    uint32_t flags;
  };

  // A token: the slot's generation above its index.
  [[nodiscard]] uint64_t tokenOf(uint32_t slot) const {
    return (static_cast<uint64_t>(slots_[slot].generation) << 32) | slot;
  }
  uint32_t allocateSlot();
  void freeSlot(uint32_t slot);
  void armPoll(uint32_t slot);
  void cancelPoll(uint32_t slot);
  // Returns the slot a completion belongs to, or -1 if it is stale.
  [[nodiscard]] int64_t liveSlot(uint64_t userData) const;
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

  UringRing ring_;
  UringFileTable files_;
  Timestamp lastRingCheck_;
  Timestamp lastPollTime_;
  std::unique_ptr<BufferRing> buffers_;
  Duration ringCheckInterval_;
  Buffer receivedView_{0};  // after buffers_: destroyed first
  std::vector<Slot> slots_;
  std::vector<uint32_t> freeSlots_;
  std::vector<Completion> completions_;
  std::vector<uint32_t> rearm_;
  std::vector<uint64_t> turnEnd_;  // tokens of handlers waiting for onTurnEnd()
  std::vector<uint64_t> nextTurnEnd_;
  uint64_t turn_ = 0;
  uint64_t grewInTurn_ = 0;
  size_t backloggedArms_[2] = {0, 0};  // by turn parity: backloggedShare()
  size_t handlerCount_ = 0;
  // Fd posts (Poller::postFd).
  const std::shared_ptr<Inbox> inbox_;          // this ring's, for loops posting here
  std::vector<std::shared_ptr<Inbox>> routes_;  // rings this one posted to, by route
  const bool canPost_;                          // MSG_RING, and not SQPOLL
  const unsigned postSqeFlags_;                 // IOSQE_CQE_SKIP_SUCCESS where known
  uint64_t failedPosts_ = 0;
  int failPostsForTesting_ = 0;
  bool boundedMultishotRecv_ = false;
};

}  // namespace libnet
