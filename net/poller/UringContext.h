// UringContext: what one io_uring loop's parts share: the ring and its
// submission queue (UringRing), the registered-file table (UringFileTable),
// the provided buffers (BufferRing) and the view a message callback gets of
// them, the registry of owners that completions are routed to (channels,
// completion handlers, fd receivers, each by a token: UringUserData.h), the
// turn-end calls handlers ask for, and the loop turn's receive accounting.
//
// The io_uring strategies (UringConnectionIo, UringAcceptorIo) submit
// through it and register with it; the UringPoller owns it, routes the
// completions it collects from its ring to the owners in its registry, and
// drives its turns. So the strategies and the poller both depend on this
// class, and neither on the other: the strategies are made by the backend's
// factory (PollerFactory.cc), which hands them the poller's context.
//
// Owned by the UringPoller; made and used only on the loop's thread (the
// ring is SINGLE_ISSUER).
#pragma once

#include <liburing.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/EventLoopOptions.h"
#include "net/Poller.h"
#include "net/poller/BufferRing.h"
#include "net/poller/CompletionHandler.h"
#include "net/poller/UringFileTable.h"
#include "net/poller/UringRing.h"
#include "net/poller/UringUserData.h"

namespace libnet {

class Channel;
class EventLoopBase;

class UringContext {
 public:
  // `setupFlags`: the probe's (UringProbe). Throws std::system_error if the
  // ring or the buffer ring cannot be built (UringRing, BufferRing).
  UringContext(EventLoopBase* loop, const IoUringOptions& options, unsigned setupFlags);
  UringContext(const UringContext&) = delete;
  UringContext& operator=(const UringContext&) = delete;

  // Submitting.
  //
  // An SQE to fill (UringRing::getSqe).
  [[nodiscard]] io_uring_sqe* getSqe() { return ring_.getSqe(); }
  [[nodiscard]] UringRing& ring() { return ring_; }
  // The IORING_SETUP_* flags chosen for the ring (UringRing::setupFlags).
  [[nodiscard]] unsigned setupFlags() const { return ring_.setupFlags(); }
  // Whether a multishot recv can be limited to a total number of bytes
  // (UringProbe::Result::boundedMultishotRecv, unless the options said no).
  [[nodiscard]] bool boundedMultishotRecv() const { return boundedMultishotRecv_; }

  // The registered-file table (UringFileTable::add / remove).
  [[nodiscard]] int registerFile(int fd) { return files_.add(fd); }
  void unregisterFile(int index) { files_.remove(index); }
  // A file-table op completed: the slot can take another socket.
  void fileUnregistered(uint32_t index) { files_.removed(index); }
  [[nodiscard]] uint32_t fileSlots() const { return files_.slots(); }
  [[nodiscard]] size_t filesRegistered() const { return files_.used(); }
  // Closes `fd` through the ring with the next submit, or with close(2) at
  // once under SQPOLL (UringRing::closeFile).
  void closeFile(UniqueFd fd) { ring_.closeFile(std::move(fd)); }

  // Provided buffers.
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
  // A buffer group id (other than the loop's own ring's) for a ring of
  // buffers that one owner registers for itself (a datagram socket, whose
  // buffers are sized for its largest datagram), and back when that ring is
  // unregistered.
  [[nodiscard]] uint16_t allocateBufferGroup() {
    if (freeGroups_.empty()) return nextGroup_++;
    const uint16_t group = freeGroups_.back();
    freeGroups_.pop_back();
    return group;
  }
  void releaseBufferGroup(uint16_t group) { freeGroups_.push_back(group); }
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
  // The Buffer a message callback gets when it is handed received bytes in
  // place (UringConnectionIo): one per loop, viewing a provided buffer only
  // for the length of one callback, so a connection carries none.
  [[nodiscard]] Buffer& receivedView() { return receivedView_; }

  // Loop turns.
  //
  // Loop turns so far (UringPoller::poll() calls): completions of one turn
  // were received in the same kernel pass.
  [[nodiscard]] uint64_t turn() const { return turn_; }
  // The poller's poll() starts the next turn.
  void beginTurn() {
    ++turn_;
    backloggedArms_[turn_ & 1] = 0;
  }
  // Calls the handler `token`'s onTurnEnd() once this loop turn's callbacks
  // and functors have run, before the wait (unless it has unregistered by
  // then).
  void atTurnEnd(uint64_t token) { turnEnd_.push_back(token); }
  // From onTurnEnd(): once more at the end of the next turn, whose poll
  // then does not wait.
  void atNextTurnEnd(uint64_t token) { nextTurnEnd_.push_back(token); }
  // Whether a handler waits for this turn's end (the wait must not block).
  [[nodiscard]] bool turnEndPending() const { return !turnEnd_.empty(); }
  // The turn's end (UringPoller::beforeWait): the handlers that asked.
  void runTurnEnd();

  // The registry: the owners completions are routed to, each in a slot
  // whose token (UringUserData.h) its ops' user_data carry. A slot holds one
  // owner, of one of three kinds.
  //
  // A completion handler (a strategy), until unregistered.
  [[nodiscard]] uint64_t registerHandler(CompletionHandler* handler);
  void unregisterHandler(uint64_t token);
  // Handlers registered: each may still have ops in flight.
  [[nodiscard]] size_t handlerCount() const { return handlerCount_; }
  // A channel (UringPoller's multishot polls): its slot, which the channel
  // keeps as its poller state.
  [[nodiscard]] uint32_t addChannel(Channel* channel);
  void removeChannel(uint32_t slot) { freeSlot(slot); }
  // A receiver of fds posted by other rings (Poller::addFdReceiver).
  [[nodiscard]] uint64_t addReceiver(Poller::FdReceiver* receiver);
  void removeReceiver(uint64_t token);
  // The slot's current token.
  [[nodiscard]] uint64_t tokenOf(uint32_t slot) const {
    return uringToken(slot, slots_[slot].generation);
  }
  // A new generation for `slot`, its owner staying: what is in flight under
  // the old token reads as stale (a channel's cancelled poll).
  void renewToken(uint32_t slot) {
    slots_[slot].generation = (slots_[slot].generation + 1) & kUringGenerationMask;
  }
  // The owner that the token in `userData` names, or nullptr if that token
  // is stale or names an owner of another kind.
  [[nodiscard]] Channel* channelOf(uint64_t userData) const;
  [[nodiscard]] CompletionHandler* handlerOf(uint64_t userData) const;
  [[nodiscard]] Poller::FdReceiver* receiverOf(uint64_t userData) const;

 private:
  struct Slot {
    Channel* channel = nullptr;
    CompletionHandler* handler = nullptr;
    Poller::FdReceiver* receiver = nullptr;
    uint32_t generation = 0;
  };

  uint32_t allocateSlot();
  void freeSlot(uint32_t slot);
  // The slot the token in `userData` names, or nullptr if it is stale.
  [[nodiscard]] const Slot* liveSlot(uint64_t userData) const;

  EventLoopBase* loop_;
  UringRing ring_;
  UringFileTable files_;
  std::unique_ptr<BufferRing> buffers_;
  Buffer receivedView_{0};  // after buffers_: destroyed first
  std::vector<Slot> slots_;
  std::vector<uint32_t> freeSlots_;
  size_t handlerCount_ = 0;
  std::vector<uint64_t> turnEnd_;  // tokens of handlers waiting for onTurnEnd()
  std::vector<uint64_t> nextTurnEnd_;
  uint64_t turn_ = 0;
  uint64_t grewInTurn_ = 0;
  size_t backloggedArms_[2] = {0, 0};  // by turn parity: backloggedShare()
  const bool boundedMultishotRecv_;
  uint16_t nextGroup_ = 1;  // 0 is buffers_'
  std::vector<uint16_t> freeGroups_;
};

}  // namespace libnet
