#include "net/TimingWheel.h"

#include <exception>
#include <stdexcept>
#include <string>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/EventLoop.h"

namespace libnet {

namespace {

// ceil(timeout / tick): how many ticks make up the timeout.
int64_t ticksPerTimeout(Duration timeout, Duration tick) {
  if (timeout <= Duration::zero() || tick <= Duration::zero()) {
    throw std::invalid_argument("TimingWheel: timeout and tick must be positive");
  }
  const int64_t ticks = timeout / tick + (timeout % tick != Duration::zero() ? 1 : 0);
  if (ticks > TimingWheel::kMaxBuckets - 1) {
    throw std::invalid_argument("TimingWheel: timeout / tick must be at most " +
                                std::to_string(TimingWheel::kMaxBuckets - 1));
  }
  return ticks;
}

// The longest tick that divides the timeout into `ticks` parts: ceil(timeout /
// ticks), never longer than the tick asked for.
Duration evenTick(Duration timeout, int64_t ticks) {
  return timeout / ticks + Duration(timeout % ticks != Duration::zero() ? 1 : 0);
}

}  // namespace

TimingWheel::TimingWheel(EventLoop* loop, Duration timeout, Duration tick, ExpireCallback expire)
    : loop_(loop),
      timeout_(timeout),
      tick_(tickFor(timeout, tick)),
      // One bucket more than the ticks in a timeout: an entry touched just
      // after a tick must still wait out the whole timeout, so its bucket
      // comes round only after timeout / tick further ticks plus the one it
      // was touched in.
      numBuckets_(static_cast<Entry>(ticksPerTimeout(timeout, tick) + 1)),
      expire_(std::move(expire)) {
  if (!expire_) throw std::invalid_argument("TimingWheel: the expire callback is empty");
  links_.resize(numBuckets_);
  conns_.resize(numBuckets_);
  for (Entry b = 0; b < numBuckets_; ++b) links_[b] = Link{b, b, 0};
}

Duration TimingWheel::tickFor(Duration timeout, Duration tick) {
  return evenTick(timeout, ticksPerTimeout(timeout, tick));
}

TimingWheel::~TimingWheel() {
  if (timer_.valid()) {
    loop_->assertInLoopThread();
    // On the loop thread the cancel takes effect at once: the tick, which
    // holds `this`, cannot run again.
    loop_->cancel(timer_);
  }
}

bool TimingWheel::onLoopThread() const { return loop_->isInLoopThread(); }

void TimingWheel::startTimer() {
  timer_ = loop_->runEvery(tick_, [this] { advance(); });
}

TimingWheel::Entry TimingWheel::add(const TcpConnectionPtr& conn) {
  loop_->assertInLoopThread();
  if (!timer_.valid()) startTimer();
  Entry e;
  if (freeHead_ != kNoEntry) {
    e = freeHead_;
    freeHead_ = links_[e].next;
    conns_[e] = conn;
  } else {
    if (links_.size() >= kNoEntry) throw std::length_error("TimingWheel: too many entries");
    e = static_cast<Entry>(links_.size());
    links_.push_back(Link{kNoEntry, kNoEntry, 0});
    try {
      conns_.emplace_back(conn);
    } catch (...) {
      links_.pop_back();
      throw;
    }
  }
  linkNewest(e);
  ++size_;
  return e;
}

void TimingWheel::remove(Entry e) {
  loop_->assertInLoopThread();
  if (e == kNoEntry) return;
  const bool tracked = e >= numBuckets_ && e < links_.size() && links_[e].prev != kNoEntry;
  assert(tracked && "TimingWheel::remove() of an entry that is not in the wheel");
  if (!tracked) return;
  unlink(e);
  release(e);
}

void TimingWheel::release(Entry e) {
  conns_[e].reset();
  links_[e].prev = kNoEntry;
  links_[e].next = freeHead_;
  freeHead_ = e;
  --size_;
}

void TimingWheel::advance() {
  loop_->assertInLoopThread();
  ++tickCount_;
  if (++newest_ == numBuckets_) newest_ = 0;
  // The bucket that becomes the newest is the oldest: whatever is still in it
  // was last touched numBuckets_ ticks ago. Each expiring entry moves to the
  // tail first, stamped with this tick, so the pass ends at the first entry
  // stamped so (re-armed, or touched or added by a callback). Nothing is held
  // across a callback but the head's index, so callbacks may remove, touch or
  // add entries anywhere, including further down this bucket.
  const Entry head = newest_;
  for (;;) {
    const Entry e = links_[head].next;
    if (e == head || links_[e].tick == tickCount_) break;
    assert(links_[e].tick == tickCount_ - numBuckets_);
    TcpConnectionPtr conn = conns_[e].lock();
    if (!conn) {
      // The connection died without remove(): reclaim the slot.
      unlink(e);
      release(e);
      continue;
    }
    moveToNewest(e);
    // One throwing callback must not leave the rest of the bucket open.
    (void)callGuarded("TimingWheel expire callback", [&] { expire_(conn); });
  }
}

size_t TimingWheel::tableBytes() const {
  return links_.capacity() * sizeof(Link) + conns_.capacity() * sizeof(conns_[0]);
}

}  // namespace libnet
