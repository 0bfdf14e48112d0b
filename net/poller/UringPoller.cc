#include "net/poller/UringPoller.h"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <exception>
#include <system_error>

#include "base/Logging.h"
#include "net/Channel.h"
#include "net/EventLoopBase.h"
#include "net/poller/UringAcceptorIo.h"
#include "net/poller/UringConnectionIo.h"
#include "net/poller/UringProbe.h"

namespace libnet {

namespace {

constexpr uint32_t kGenerationMask = 0xFFFFFF;  // 24 bits in user_data
constexpr uint16_t kBufferGroup = 0;

// The probe's setup flags; throws if io_uring cannot run here.
unsigned probedSetupFlags() {
  const UringProbe::Result& probed = UringProbe::result();
  if (!probed.ok) {
    throw std::system_error(probed.error, std::system_category(),
                            "io_uring unavailable (" + probed.detail + ")");
  }
  return probed.setupFlags;
}

}  // namespace

UringPoller::UringPoller(EventLoopBase* loop, const IoUringOptions& options)
    : Poller(loop),
      ring_(options, probedSetupFlags()),
      files_(ring_, options.fixedFiles),
      buffers_(std::make_unique<BufferRing>(ring_.get(), kBufferGroup, options.bufferCount,
                                            options.bufferSize, options.initialBufferCount,
                                            options.incrementalBuffers)),
      ringCheckInterval_(std::chrono::milliseconds(std::max<uint32_t>(1, options.bufferCheckMs))),
      inbox_(std::make_shared<Inbox>(ring_.fd())),
      // With SQPOLL the kernel's thread takes SQEs when it gets to them, so
      // flushPosts() could not promise they have left: no posts from such
      // a ring (posts to one work).
      canPost_(UringProbe::result().msgRing && !ring_.sqPoll()),
      postSqeFlags_((ring_.features() & IORING_FEAT_CQE_SKIP) ? IOSQE_CQE_SKIP_SUCCESS : 0),
      boundedMultishotRecv_(options.boundedMultishotRecv &&
                            UringProbe::result().boundedMultishotRecv) {
  completions_.reserve(1024);
}

// The buffer ring goes before the ring it is registered with (members are
// destroyed in reverse order: receivedView_, buffers_, files_, ring_).
UringPoller::~UringPoller() {
  // EventLoop's destructor turned this poller until every post that was
  // on its way here had arrived (ownersInFlight()), bounded: one still
  // missing would land in a ring nobody reads, and its fd stay open.
  inbox_->closed.store(true, std::memory_order_seq_cst);
  const uint64_t settled = inbox_->settled.load(std::memory_order_acquire);
  const uint64_t posted = inbox_->posted.load(std::memory_order_acquire);
  if (posted != settled) {
    LOG_ERROR << "io_uring: ring destroyed with " << posted - settled
              << " fd(s) posted to it still on their way";
  }
  // Posts still queued here go out now, so that a failure among them comes
  // back before the ring closes; then what the CQ holds is given back.
  ring_.submit();
  dropUnhandled();
}

void UringPoller::dropUnhandled() {
  for (const Completion& c : completions_) {
    if (static_cast<Op>(c.userData >> 56) == UringOp::kFdPosted) {
      closeFile(UniqueFd(c.res));
    } else {
      dropStale(c);
    }
  }
  completions_.clear();
  unsigned head = 0;
  unsigned seen = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(ring_.get(), head, cqe) {
    ++seen;
    const Completion c{cqe->user_data, cqe->res, cqe->flags};
    const auto op = static_cast<Op>(c.userData >> 56);
    if (op == UringOp::kFdPost) {
      onPostCompletion(c);
    } else if (op == UringOp::kFdPosted) {
      inbox_->settled.fetch_add(1, std::memory_order_acq_rel);
      closeFile(UniqueFd(c.res));
    } else if (op == kAccept && c.res >= 0) {
      closeFile(UniqueFd(c.res));
    }
  }
  io_uring_cq_advance(ring_.get(), seen);
}

size_t UringPoller::ownersInFlight() const {
  // Settled first: it never passes posted, so the difference cannot wrap.
  const uint64_t settled = inbox_->settled.load(std::memory_order_acquire);
  const uint64_t posted = inbox_->posted.load(std::memory_order_acquire);
  return handlerCount_ + static_cast<size_t>(posted - settled);
}

uint32_t UringPoller::allocateSlot() {
  if (!freeSlots_.empty()) {
    const uint32_t slot = freeSlots_.back();
    freeSlots_.pop_back();
    return slot;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

void UringPoller::freeSlot(uint32_t slot) {
  Slot& s = slots_[slot];
  s.channel = nullptr;
  s.handler = nullptr;
  s.receiver = nullptr;
  s.pollArmed = false;
  s.armedMask = 0;
  // Whatever is still in flight for the old owner now reads as stale.
  s.generation = (s.generation + 1) & kGenerationMask;
  freeSlots_.push_back(slot);
}

void UringPoller::armPoll(uint32_t slot) {
  Slot& s = slots_[slot];
  io_uring_sqe* sqe = getSqe();
  io_uring_prep_poll_multishot(sqe, s.channel->fd(), s.channel->events());
  io_uring_sqe_set_data64(sqe, completionUserData(kPoll, tokenOf(slot)));
  s.pollArmed = true;
  s.armedMask = s.channel->events();
}

void UringPoller::cancelPoll(uint32_t slot) {
  Slot& s = slots_[slot];
  io_uring_sqe* sqe = getSqe();
  io_uring_prep_poll_remove(sqe, completionUserData(kPoll, tokenOf(slot)));
  io_uring_sqe_set_data64(sqe, completionUserData(kIgnore, 0));
  s.pollArmed = false;
  s.armedMask = 0;
  // The cancelled poll's last completion must not be taken for a new one.
  s.generation = (s.generation + 1) & kGenerationMask;
}

void UringPoller::updateChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() < 0) {
    const uint32_t slot = allocateSlot();
    slots_[slot].channel = channel;
    channel->setPollerState(static_cast<int>(slot));
  }
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  Slot& s = slots_[slot];
  if (s.pollArmed && s.armedMask == channel->events()) return;
  if (s.pollArmed) cancelPoll(slot);
  if (!channel->isNoneEvent()) armPoll(slot);
}

void UringPoller::removeChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() < 0) return;
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  if (slots_[slot].pollArmed) cancelPoll(slot);
  freeSlot(slot);
  channel->setPollerState(-1);
}

uint64_t UringPoller::registerHandler(Handler* handler) {
  ownerLoop_->assertInLoopThread();
  const uint32_t slot = allocateSlot();
  slots_[slot].handler = handler;
  ++handlerCount_;
  return tokenOf(slot);
}

void UringPoller::unregisterHandler(uint64_t token) {
  ownerLoop_->assertInLoopThread();
  const auto slot = static_cast<uint32_t>(token & 0xFFFFFFFF);
  if (slot < slots_.size() && tokenOf(slot) == token) {
    --handlerCount_;
    freeSlot(slot);
  }
}

uint64_t UringPoller::addFdReceiver(FdReceiver* receiver) {
  ownerLoop_->assertInLoopThread();
  // Not counted in handlerCount_: a receiver has nothing in flight of its
  // own; the posts on their way here are counted by the inbox.
  const uint32_t slot = allocateSlot();
  slots_[slot].receiver = receiver;
  return tokenOf(slot);
}

void UringPoller::removeFdReceiver(uint64_t token) {
  ownerLoop_->assertInLoopThread();
  const auto slot = static_cast<uint32_t>(token & 0xFFFFFFFF);
  if (slot < slots_.size() && tokenOf(slot) == token && slots_[slot].receiver != nullptr) {
    freeSlot(slot);
  }
}

bool UringPoller::canPostTo(const Poller& target) const {
  return canPost_ && &target != this && target.kind() == PollerKind::kIoUring;
}

uint32_t UringPoller::routeTo(const std::shared_ptr<Inbox>& inbox) {
  for (size_t i = 0; i < routes_.size(); ++i) {
    if (routes_[i] == inbox) return static_cast<uint32_t>(i);
  }
  // A route to a ring that has gone, with nothing of ours left on its way
  // there (no failure still to come back naming it), is reused.
  for (size_t i = 0; i < routes_.size(); ++i) {
    Inbox& old = *routes_[i];
    if (old.closed.load(std::memory_order_acquire) &&
        old.settled.load(std::memory_order_acquire) == old.posted.load(std::memory_order_acquire)) {
      routes_[i] = inbox;
      return static_cast<uint32_t>(i);
    }
  }
  routes_.push_back(inbox);
  return static_cast<uint32_t>(routes_.size() - 1);
}

void UringPoller::postFd(Poller& target, uint64_t token, UniqueFd fd) {
  ownerLoop_->assertInLoopThread();
  assert(canPostTo(target));
  const std::shared_ptr<Inbox>& inbox = static_cast<UringPoller&>(target).inbox_;
  // Counted before the check, which the target's destructor makes in the
  // other order (closed, then the counts): either it sees this post and
  // waits for it, or this sees it closed.
  inbox->posted.fetch_add(1, std::memory_order_seq_cst);
  if (inbox->closed.load(std::memory_order_seq_cst)) {
    inbox->settled.fetch_add(1, std::memory_order_acq_rel);
    LOG_ERROR << "io_uring: an fd posted to a loop already destroyed; closed it";
    closeFile(std::move(fd));
    return;
  }
  const uint32_t route = routeTo(inbox);
  int ringFd = inbox->ringFd;
  if (failPostsForTesting_ > 0) {
    --failPostsForTesting_;
    ringFd = -1;
  }
  const int raw = fd.release();
  io_uring_sqe* sqe = getSqe();
  // IORING_MSG_DATA: the target's completion gets `len` as its res (the
  // fd) and `data` as its user_data (the receiver's token).
  io_uring_prep_msg_ring(sqe, ringFd, static_cast<unsigned>(raw),
                         completionUserData(UringOp::kFdPosted, token), 0);
  sqe->flags |= static_cast<uint8_t>(postSqeFlags_);
  io_uring_sqe_set_data64(sqe, postUserData(route, raw));
  ring_.ownUntilSubmitted(raw);
}

void UringPoller::onPostCompletion(const Completion& c) {
  if (c.res >= 0) return;  // arrived (a kernel that cannot skip this completion)
  const int fd = fdOfPost(c.userData);
  const uint32_t route = routeOfPost(c.userData);
  if (route < routes_.size()) routes_[route]->settled.fetch_add(1, std::memory_order_acq_rel);
  ++failedPosts_;
  LOG_WARN << "io_uring: posting fd " << fd << " to another loop's ring failed ("
           << strerrorTl(-c.res) << "); closed it";
  closeFile(UniqueFd(fd));
}

void UringPoller::deliverPosted(const Completion& c) {
  UniqueFd fd(c.res);
  const int64_t slot = liveSlot(c.userData);
  FdReceiver* receiver = slot < 0 ? nullptr : slots_[static_cast<size_t>(slot)].receiver;
  if (receiver == nullptr) {
    // Its receiver left (a server torn down while connections were on their
    // way to this loop).
    closeFile(std::move(fd));
    return;
  }
  receiver->onFdPosted(std::move(fd));
}

int64_t UringPoller::liveSlot(uint64_t userData) const {
  const auto slot = static_cast<uint32_t>(userData & 0xFFFFFFFF);
  const auto generation = static_cast<uint32_t>((userData >> 32) & kGenerationMask);
  if (slot >= slots_.size() || slots_[slot].generation != generation) return -1;
  return slot;
}

void UringPoller::dropStale(const Completion& c) {
  // Its owner is gone: give back what the completion holds.
  if (c.flags & IORING_CQE_F_BUFFER) {
    buffers_->finished(buffers_->received(c.flags, c.res).id);
  }
  if (static_cast<Op>(c.userData >> 56) == kAccept && c.res >= 0) ::close(c.res);
}

Timestamp UringPoller::poll(Duration timeout, ChannelList* active) {
  ++turn_;
  backloggedArms_[turn_ & 1] = 0;
  // A grown buffer ring is weighed about once a second (BufferRing), also
  // while the loop is otherwise idle, so a burst's memory goes back soon.
  if (buffers_->provided() > buffers_->initial()) timeout = std::min(timeout, ringCheckInterval_);
  // A handler put its sends off to the next turn end (UringConnectionIo):
  // collect what is ready and come straight back.
  if (!turnEnd_.empty()) timeout = Duration::zero();
  // Here, before the wait, every completion collected last turn has been
  // handled: a buffer the kernel filled is never taken for idle (BufferRing).
  shrinkBuffersIfDue();
  ring_.submitAndWait(timeout);
  lastPollTime_ = Timestamp::now();
  collectCompletions(active);
  afterCollect();
  return lastPollTime_;
}

void UringPoller::shrinkBuffersIfDue() {
  assert(completions_.empty());
  // The last wait's return time: no clock read of its own per turn.
  if (lastPollTime_ - lastRingCheck_ < ringCheckInterval_) return;
  lastRingCheck_ = lastPollTime_;
  // Pages go back only where the kernel fills buffers nowhere but inside
  // this loop's io_uring_enter: with DEFER_TASKRUN, and not with SQPOLL,
  // whose kernel thread receives concurrently.
  const bool trimPages = (ring_.setupFlags() & IORING_SETUP_DEFER_TASKRUN) && !ring_.sqPoll();
  buffers_->shrinkIfQuiet(trimPages);
}

void UringPoller::collectCompletions(ChannelList* active) {
  unsigned head = 0;
  unsigned seen = 0;
  uint32_t withBuffer = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(ring_.get(), head, cqe) {
    ++seen;
    const Completion c{cqe->user_data, cqe->res, cqe->flags};
    if (c.flags & IORING_CQE_F_BUFFER) ++withBuffer;
    const auto op = static_cast<Op>(c.userData >> 56);
    if (op == kPoll) {
      onPollCompletion(c, active);
    } else if (op == UringOp::kFileRegistered) {
      // Fails only on a broken invariant (a slot out of range); the
      // connection's ops on the slot then fail with EBADF and close it.
      if (c.res < 0) {
        LOG_ERROR << "io_uring: registering a file in slot " << (c.userData & 0xFFFFFFFF) << ": "
                  << strerrorTl(-c.res);
      }
    } else if (op == UringOp::kFileClosed) {
      // The slot is empty now (or was already: a close_direct fails only on
      // an empty slot), so it can take another socket.
      files_.removed(static_cast<uint32_t>(c.userData & 0xFFFFFFFF));
    } else if (op == UringOp::kFdPost) {
      onPostCompletion(c);
    } else if (op == UringOp::kFdPosted) {
      // Here now: handed to its receiver (or closed) in the event phase.
      inbox_->settled.fetch_add(1, std::memory_order_acq_rel);
      completions_.push_back(c);
    } else if (op != kIgnore) {
      completions_.push_back(c);  // checked for staleness when dispatched
    }
  }
  io_uring_cq_advance(ring_.get(), seen);
  buffers_->noteDemand(withBuffer);
}

void UringPoller::onPollCompletion(const Completion& c, ChannelList* active) {
  const int64_t slot = liveSlot(c.userData);
  if (slot < 0) return;
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (!(c.flags & IORING_CQE_F_MORE)) {
    s.pollArmed = false;
    rearm_.push_back(static_cast<uint32_t>(slot));
  }
  if (c.res <= 0 || s.channel == nullptr) return;  // cancelled, or an error
  if (s.activeTurn == turn_) {
    s.channel->setReturnedEvents(s.channel->returnedEvents() | static_cast<uint32_t>(c.res));
  } else {
    s.activeTurn = turn_;
    s.channel->setReturnedEvents(static_cast<uint32_t>(c.res));
    active->push_back(s.channel);
  }
}

void UringPoller::afterCollect() {
  // A multishot poll ended (CQ overflow, an error): arm a fresh one if the
  // channel still wants events. It goes out with the next submit.
  for (const uint32_t slot : rearm_) {
    Slot& s = slots_[slot];
    if (s.channel && !s.pollArmed && !s.channel->isNoneEvent()) armPoll(slot);
  }
  rearm_.clear();
}

void UringPoller::dispatchCompletions() {
  // Handlers may close connections (making later completions of this batch
  // stale) or prepare new SQEs; both are fine while iterating a copy.
  for (size_t i = 0; i < completions_.size(); ++i) {
    const Completion c = completions_[i];
    if (static_cast<Op>(c.userData >> 56) == UringOp::kFdPosted) {
      try {
        deliverPosted(c);
      } catch (const std::exception& e) {
        LOG_ERROR << "exception escaped an fd receiver: " << e.what();
      } catch (...) {
        LOG_ERROR << "unknown exception escaped an fd receiver";
      }
      continue;
    }
    const int64_t slot = liveSlot(c.userData);
    if (slot < 0 || slots_[static_cast<size_t>(slot)].handler == nullptr) {
      dropStale(c);
      continue;
    }
    try {
      slots_[static_cast<size_t>(slot)].handler->onCompletion(static_cast<Op>(c.userData >> 56),
                                                              c.res, c.flags);
    } catch (const std::exception& e) {
      LOG_ERROR << "exception escaped an io_uring completion handler: " << e.what();
    } catch (...) {
      LOG_ERROR << "unknown exception escaped an io_uring completion handler";
    }
  }
  completions_.clear();
}

void UringPoller::beforeWait() {
  // By index: a handler's onTurnEnd() may add to the list (a callback it
  // runs, a write-complete say, writing to another connection).
  for (size_t i = 0; i < turnEnd_.size(); ++i) {
    const int64_t slot = liveSlot(turnEnd_[i]);
    if (slot < 0) continue;  // unregistered since it asked
    Handler* handler = slots_[static_cast<size_t>(slot)].handler;
    if (handler == nullptr) continue;
    try {
      handler->onTurnEnd();
    } catch (const std::exception& e) {
      LOG_ERROR << "exception escaped an io_uring turn-end handler: " << e.what();
    } catch (...) {
      LOG_ERROR << "unknown exception escaped an io_uring turn-end handler";
    }
  }
  turnEnd_.clear();
  turnEnd_.swap(nextTurnEnd_);
}

ConnectionIo::Ptr UringPoller::newConnectionIo(const ConnectionIo::Parts& parts) {
  static_assert(sizeof(UringConnectionIo) <= ConnectionIo::Room::kConnectionRoom,
                "a connection and its strategy are one allocation");
  return ConnectionIo::make<UringConnectionIo>(parts.room, this, ownerLoop_, parts);
}

std::unique_ptr<AcceptorIo> UringPoller::newAcceptorIo(AcceptorIo::Owner* owner, int listenFd) {
  return std::make_unique<UringAcceptorIo>(this, ownerLoop_, owner, listenFd);
}

}  // namespace libnet
