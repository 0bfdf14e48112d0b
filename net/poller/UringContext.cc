#include "net/poller/UringContext.h"

#include <exception>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/EventLoopBase.h"
#include "net/poller/UringProbe.h"

namespace libnet {

namespace {

constexpr uint16_t kBufferGroup = 0;

}  // namespace

// Members are destroyed in reverse order (receivedView_, buffers_, files_,
// ring_): the buffer ring goes before the ring it is registered with.
UringContext::UringContext(EventLoopBase* loop, const IoUringOptions& options, unsigned setupFlags)
    : loop_(loop),
      ring_(options, setupFlags),
      files_(ring_, options.fixedFiles),
      buffers_(std::make_unique<BufferRing>(ring_.get(), kBufferGroup, options.bufferCount,
                                            options.bufferSize, options.initialBufferCount,
                                            options.incrementalBuffers)),
      boundedMultishotRecv_(options.boundedMultishotRecv &&
                            UringProbe::result().boundedMultishotRecv) {}

void UringContext::runTurnEnd() {
  // By index: a handler's onTurnEnd() may add to the list (a callback it
  // runs, a write-complete say, writing to another connection).
  for (size_t i = 0; i < turnEnd_.size(); ++i) {
    CompletionHandler* handler = handlerOf(turnEnd_[i]);
    if (handler == nullptr) continue;  // unregistered since it asked
    (void)callGuarded("io_uring turn-end handler", [&] { handler->onTurnEnd(); });
  }
  turnEnd_.clear();
  turnEnd_.swap(nextTurnEnd_);
}

uint32_t UringContext::allocateSlot() {
  if (!freeSlots_.empty()) {
    const uint32_t slot = freeSlots_.back();
    freeSlots_.pop_back();
    return slot;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

void UringContext::freeSlot(uint32_t slot) {
  Slot& s = slots_[slot];
  s.channel = nullptr;
  s.handler = nullptr;
  s.receiver = nullptr;
  // Whatever is still in flight for the old owner now reads as stale.
  renewToken(slot);
  freeSlots_.push_back(slot);
}

const UringContext::Slot* UringContext::liveSlot(uint64_t userData) const {
  const uint32_t slot = slotOf(userData);
  if (slot >= slots_.size() || slots_[slot].generation != generationOf(userData)) return nullptr;
  return &slots_[slot];
}

uint64_t UringContext::registerHandler(CompletionHandler* handler) {
  loop_->assertInLoopThread();
  const uint32_t slot = allocateSlot();
  slots_[slot].handler = handler;
  ++handlerCount_;
  return tokenOf(slot);
}

void UringContext::unregisterHandler(uint64_t token) {
  loop_->assertInLoopThread();
  if (handlerOf(token) != nullptr) {
    --handlerCount_;
    freeSlot(slotOf(token));
  }
}

uint32_t UringContext::addChannel(Channel* channel) {
  const uint32_t slot = allocateSlot();
  slots_[slot].channel = channel;
  return slot;
}

uint64_t UringContext::addReceiver(Poller::FdReceiver* receiver) {
  // Not counted in handlerCount_: a receiver has nothing in flight of its
  // own; the posts on their way here are counted by the poller.
  const uint32_t slot = allocateSlot();
  slots_[slot].receiver = receiver;
  return tokenOf(slot);
}

void UringContext::removeReceiver(uint64_t token) {
  if (receiverOf(token) != nullptr) freeSlot(slotOf(token));
}

Channel* UringContext::channelOf(uint64_t userData) const {
  const Slot* s = liveSlot(userData);
  return s == nullptr ? nullptr : s->channel;
}

CompletionHandler* UringContext::handlerOf(uint64_t userData) const {
  const Slot* s = liveSlot(userData);
  return s == nullptr ? nullptr : s->handler;
}

Poller::FdReceiver* UringContext::receiverOf(uint64_t userData) const {
  const Slot* s = liveSlot(userData);
  return s == nullptr ? nullptr : s->receiver;
}

}  // namespace libnet
