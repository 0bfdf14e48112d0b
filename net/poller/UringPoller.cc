#include "net/poller/UringPoller.h"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <exception>
#include <system_error>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/Channel.h"
#include "net/EventLoopBase.h"
#include "net/poller/UringProbe.h"

namespace libnet {

namespace {

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
      context_(loop, options, probedSetupFlags()),
      ringCheckInterval_(std::chrono::milliseconds(std::max<uint32_t>(1, options.bufferCheckMs))),
      inbox_(std::make_shared<Inbox>(context_.ring().fd())),
      // With SQPOLL the kernel's thread takes SQEs when it gets to them, so
      // flushPosts() could not promise they have left: no posts from such
      // a ring (posts to one work).
      canPost_(UringProbe::result().msgRing && !context_.ring().sqPoll()),
      postSqeFlags_((context_.ring().features() & IORING_FEAT_CQE_SKIP) ? IOSQE_CQE_SKIP_SUCCESS
                                                                        : 0) {
  completions_.reserve(1024);
}

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
  context_.ring().submit();
  dropUnhandled();
}

void UringPoller::dropUnhandled() {
  for (const Completion& c : completions_) {
    if (opOf(c.userData) == UringOp::kFdPosted) {
      context_.closeFile(UniqueFd(c.res));
    } else {
      dropStale(c);
    }
  }
  completions_.clear();
  unsigned head = 0;
  unsigned seen = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring* ring = context_.ring().get();
  io_uring_for_each_cqe(ring, head, cqe) {
    ++seen;
    const Completion c{cqe->user_data, cqe->res, cqe->flags};
    const UringOp op = opOf(c.userData);
    if (op == UringOp::kFdPost) {
      onPostCompletion(c);
    } else if (op == UringOp::kFdPosted) {
      inbox_->settled.fetch_add(1, std::memory_order_acq_rel);
      context_.closeFile(UniqueFd(c.res));
    } else if (op == UringOp::kAccept && c.res >= 0) {
      context_.closeFile(UniqueFd(c.res));
    }
  }
  io_uring_cq_advance(ring, seen);
}

size_t UringPoller::ownersInFlight() const {
  // Settled first: it never passes posted, so the difference cannot wrap.
  const uint64_t settled = inbox_->settled.load(std::memory_order_acquire);
  const uint64_t posted = inbox_->posted.load(std::memory_order_acquire);
  return context_.handlerCount() + static_cast<size_t>(posted - settled);
}

void UringPoller::armPoll(uint32_t slot, Channel* channel) {
  io_uring_sqe* sqe = context_.getSqe();
  io_uring_prep_poll_multishot(sqe, channel->fd(), channel->events());
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kPoll, context_.tokenOf(slot)));
  polls_[slot].armed = true;
  polls_[slot].armedMask = channel->events();
}

void UringPoller::cancelPoll(uint32_t slot) {
  io_uring_sqe* sqe = context_.getSqe();
  io_uring_prep_poll_remove(sqe, completionUserData(UringOp::kPoll, context_.tokenOf(slot)));
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kIgnore, 0));
  polls_[slot].armed = false;
  polls_[slot].armedMask = 0;
  // The cancelled poll's last completion must not be taken for a new one.
  context_.renewToken(slot);
}

void UringPoller::updateChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() < 0) {
    const uint32_t slot = context_.addChannel(channel);
    if (slot >= polls_.size()) polls_.resize(slot + 1);
    polls_[slot] = ChannelPoll{};
    channel->setPollerState(static_cast<int>(slot));
  }
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  const ChannelPoll& p = polls_[slot];
  if (p.armed && p.armedMask == channel->events()) return;
  if (p.armed) cancelPoll(slot);
  if (!channel->isNoneEvent()) armPoll(slot, channel);
}

void UringPoller::removeChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() < 0) return;
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  if (polls_[slot].armed) cancelPoll(slot);
  polls_[slot] = ChannelPoll{};
  context_.removeChannel(slot);
  channel->setPollerState(-1);
}

uint64_t UringPoller::addFdReceiver(FdReceiver* receiver) {
  ownerLoop_->assertInLoopThread();
  // Not counted as a handler: a receiver has nothing in flight of its own;
  // the posts on their way here are counted by the inbox.
  return context_.addReceiver(receiver);
}

void UringPoller::removeFdReceiver(uint64_t token) {
  ownerLoop_->assertInLoopThread();
  context_.removeReceiver(token);
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
    context_.closeFile(std::move(fd));
    return;
  }
  const uint32_t route = routeTo(inbox);
  int ringFd = inbox->ringFd;
  if (failPostsForTesting_ > 0) {
    --failPostsForTesting_;
    ringFd = -1;
  }
  const int raw = fd.release();
  io_uring_sqe* sqe = context_.getSqe();
  // IORING_MSG_DATA: the target's completion gets `len` as its res (the
  // fd) and `data` as its user_data (the receiver's token).
  io_uring_prep_msg_ring(sqe, ringFd, static_cast<unsigned>(raw),
                         completionUserData(UringOp::kFdPosted, token), 0);
  sqe->flags |= static_cast<uint8_t>(postSqeFlags_);
  io_uring_sqe_set_data64(sqe, postUserData(route, raw));
  context_.ring().ownUntilSubmitted(raw);
}

void UringPoller::onPostCompletion(const Completion& c) {
  if (c.res >= 0) return;  // arrived (a kernel that cannot skip this completion)
  const int fd = fdOfPost(c.userData);
  const uint32_t route = routeOfPost(c.userData);
  if (route < routes_.size()) routes_[route]->settled.fetch_add(1, std::memory_order_acq_rel);
  ++failedPosts_;
  LOG_WARN << "io_uring: posting fd " << fd << " to another loop's ring failed ("
           << strerrorTl(-c.res) << "); closed it";
  context_.closeFile(UniqueFd(fd));
}

void UringPoller::deliverPosted(const Completion& c) {
  UniqueFd fd(c.res);
  FdReceiver* receiver = context_.receiverOf(c.userData);
  if (receiver == nullptr) {
    // Its receiver left (a server torn down while connections were on their
    // way to this loop).
    context_.closeFile(std::move(fd));
    return;
  }
  receiver->onFdPosted(std::move(fd));
}

void UringPoller::dropStale(const Completion& c) {
  // Its owner is gone: give back what the completion holds.
  if (c.flags & IORING_CQE_F_BUFFER) {
    BufferRing& buffers = context_.buffers();
    buffers.finished(buffers.received(c.flags, c.res).id);
  }
  if (opOf(c.userData) == UringOp::kAccept && c.res >= 0) ::close(c.res);
}

Timestamp UringPoller::poll(Duration timeout, ChannelList* active) {
  context_.beginTurn();
  // A grown buffer ring is weighed about once a second (BufferRing), also
  // while the loop is otherwise idle, so a burst's memory goes back soon.
  const BufferRing& buffers = context_.buffers();
  if (buffers.provided() > buffers.initial()) timeout = std::min(timeout, ringCheckInterval_);
  // A handler put its sends off to the next turn end (UringConnectionIo):
  // collect what is ready and come straight back.
  if (context_.turnEndPending()) timeout = Duration::zero();
  // Here, before the wait, every completion collected last turn has been
  // handled: a buffer the kernel filled is never taken for idle (BufferRing).
  shrinkBuffersIfDue();
  context_.ring().submitAndWait(timeout);
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
  const UringRing& ring = context_.ring();
  const bool trimPages = (ring.setupFlags() & IORING_SETUP_DEFER_TASKRUN) && !ring.sqPoll();
  context_.buffers().shrinkIfQuiet(trimPages);
}

void UringPoller::collectCompletions(ChannelList* active) {
  unsigned head = 0;
  unsigned seen = 0;
  uint32_t withBuffer = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring* ring = context_.ring().get();
  io_uring_for_each_cqe(ring, head, cqe) {
    ++seen;
    const Completion c{cqe->user_data, cqe->res, cqe->flags};
    if (c.flags & IORING_CQE_F_BUFFER) ++withBuffer;
    const UringOp op = opOf(c.userData);
    if (op == UringOp::kPoll) {
      onPollCompletion(c, active);
    } else if (op == UringOp::kFileRegistered) {
      // Fails only on a broken invariant (a slot out of range); the
      // connection's ops on the slot then fail with EBADF and close it.
      if (c.res < 0) {
        LOG_ERROR << "io_uring: registering a file in slot " << slotOf(c.userData) << ": "
                  << strerrorTl(-c.res);
      }
    } else if (op == UringOp::kFileClosed) {
      // The slot is empty now (or was already: a close_direct fails only on
      // an empty slot), so it can take another socket.
      context_.fileUnregistered(slotOf(c.userData));
    } else if (op == UringOp::kFdPost) {
      onPostCompletion(c);
    } else if (op == UringOp::kFdPosted) {
      // Here now: handed to its receiver (or closed) in the event phase.
      inbox_->settled.fetch_add(1, std::memory_order_acq_rel);
      completions_.push_back(c);
    } else if (op != UringOp::kIgnore) {
      completions_.push_back(c);  // checked for staleness when dispatched
    }
  }
  io_uring_cq_advance(ring, seen);
  context_.buffers().noteDemand(withBuffer);
}

void UringPoller::onPollCompletion(const Completion& c, ChannelList* active) {
  Channel* channel = context_.channelOf(c.userData);
  if (channel == nullptr) return;  // stale
  const uint32_t slot = slotOf(c.userData);
  ChannelPoll& p = polls_[slot];
  if (!(c.flags & IORING_CQE_F_MORE)) {
    p.armed = false;
    rearm_.push_back(slot);
  }
  if (c.res <= 0) return;  // cancelled, or an error
  if (p.activeTurn == context_.turn()) {
    channel->setReturnedEvents(channel->returnedEvents() | static_cast<uint32_t>(c.res));
  } else {
    p.activeTurn = context_.turn();
    channel->setReturnedEvents(static_cast<uint32_t>(c.res));
    active->push_back(channel);
  }
}

void UringPoller::afterCollect() {
  // A multishot poll ended (CQ overflow, an error): arm a fresh one if the
  // channel still wants events. It goes out with the next submit.
  for (const uint32_t slot : rearm_) {
    Channel* channel = context_.channelOf(context_.tokenOf(slot));
    if (channel != nullptr && !polls_[slot].armed && !channel->isNoneEvent()) {
      armPoll(slot, channel);
    }
  }
  rearm_.clear();
}

void UringPoller::dispatchCompletions() {
  // Handlers may close connections (making later completions of this batch
  // stale) or prepare new SQEs; both are fine while iterating a copy.
  for (size_t i = 0; i < completions_.size(); ++i) {
    const Completion c = completions_[i];
    if (opOf(c.userData) == UringOp::kFdPosted) {
      (void)callGuarded("fd receiver", [&] { deliverPosted(c); });
      continue;
    }
    CompletionHandler* handler = context_.handlerOf(c.userData);
    if (handler == nullptr) {
      dropStale(c);
      continue;
    }
    (void)callGuarded("io_uring completion handler",
                      [&] { handler->onCompletion(opOf(c.userData), c.res, c.flags); });
  }
  completions_.clear();
}

}  // namespace libnet
