// TimingWheel: finds the connections of one loop on which nothing has moved
// for a while and hands them to its expire callback (TcpServer's closes them),
// on one periodic timer of that loop, without a timer per connection and
// without looking at busy connections on every tick. Its user touches an
// entry whenever something moves (TcpServer's connections: on every read and
// on output progress). The wheel knows a connection only as the
// TcpConnectionPtr it is given (net/Callbacks.h), and calls nothing on it.
//
// The wheel is a ring of buckets, one per tick. An entry sits in the bucket of
// the tick in which it was last touched; touch() moves it to the newest
// bucket. On each tick the oldest bucket comes round again, and the entries
// still in it have gone untouched for the whole timeout: their connections
// are handed to the expire callback. Only that bucket is looked at, so a tick
// costs O(entries expiring), and a touch is O(1) with no allocation (a
// comparison when the entry is already newest).
//
// Window: a connection is expired no earlier than `timeout` after its last
// touch and no later than `timeout + tick`. When `timeout` is not a multiple
// of `tick`, the wheel ticks slightly faster (timeout / ceil(timeout / tick))
// to keep that window. The bounds are as good as the loop's timer: TimerQueue
// schedules each repeat one interval after the run began, so ticks are never
// closer together than `tick` (the lower bound holds, to the microseconds a
// tick may wait behind other timers due in the same batch), while a tick
// that runs late because the loop was busy (say, closing thousands of
// connections expired by the previous tick) delays expiry by that much, and
// the ticks after it with it. Expiring late is preferred to expiring early:
// a touch reads no clock, so a wheel catching up on missed ticks could expire
// a connection touched just before it caught up.
//
// Entries are indexes into two slot vectors with a free list: a 12-byte link
// (the bucket's doubly-linked list and the tick of the last touch), which is
// all that touch() reads or writes, and a 16-byte weak_ptr to the connection.
// The wheel never keeps a connection alive. Removed slots are reused, so the
// tables grow to the peak number of entries, not with churn.
//
// Threads: construction touches nothing of the loop (the timer starts with
// the first add()), so a wheel may be built on any thread and handed to the
// loop thread through runInLoop()/queueInLoop(). Everything else, destruction
// included, happens on the loop thread.
//
// Reentrancy: the expire callback may close connections (its own or others
// later in the same bucket), and may call remove(), touch() or add() for any
// entry, its own included. It must not destroy the wheel. One that throws is
// logged; the rest of the bucket is still handed over.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "base/Timestamp.h"
#include "net/Callbacks.h"
#include "net/TimerId.h"

namespace libnet {

class EventLoop;

class TimingWheel {
 public:
  using Entry = uint32_t;
  static constexpr Entry kNoEntry = std::numeric_limits<Entry>::max();
  // Each bucket costs a slot (28 bytes); a million of them is already a
  // microsecond tick on a one-second timeout.
  static constexpr Entry kMaxBuckets = 1 << 20;
  // Runs on the loop thread for each connection that expired: what idleness
  // means is the callback's to decide (TcpServer closes the connection). The
  // entry stays in the wheel, as if just touched: a connection the callback
  // leaves open comes round again one timeout later.
  using ExpireCallback = IdleCallback;

  // Throws std::invalid_argument unless timeout and tick are positive,
  // timeout / tick is at most kMaxBuckets - 1, and `expire` is not empty (a
  // wheel that did nothing on expiry would only cost memory and ticks).
  TimingWheel(EventLoop* loop, Duration timeout, Duration tick, ExpireCallback expire);
  ~TimingWheel();
  TimingWheel(const TimingWheel&) = delete;
  TimingWheel& operator=(const TimingWheel&) = delete;

  // Tracks `conn` as just touched. The entry is the caller's until it calls
  // remove(); the owner must remove it by the time the connection is
  // destroyed. (An entry whose connection died first is reclaimed when its
  // bucket expires, after which it must not be used again.)
  [[nodiscard]] Entry add(const TcpConnectionPtr& conn);

  // Something moved (bytes arrived, or queued output was written): the
  // connection is not idle. The hot path, run on every read,
  // so the thread check is a debug assertion here, not assertInLoopThread().
  void touch(Entry e) {
    assert(onLoopThread());
    assert(e >= numBuckets_ && e < links_.size() && links_[e].prev != kNoEntry);
    if (links_[e].tick != tickCount_) moveToNewest(e);
  }

  // Stops tracking `e` (kNoEntry: nothing). Also from inside the expire
  // callback, for any entry.
  void remove(Entry e);

  // Runs one tick now, as the timer does: the oldest bucket expires. Tests
  // and benchmarks drive the wheel with it; a wheel they drive should have a
  // tick long enough that its own timer stays out of the way.
  void advance();

  // The tick a wheel built with these arguments uses (at most `tick`).
  // Throws std::invalid_argument as the constructor does.
  [[nodiscard]] static Duration tickFor(Duration timeout, Duration tick);

  // Tracked entries, including any whose connection died without remove().
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] Duration timeout() const { return timeout_; }
  // The tick the wheel really uses (at most the one asked for).
  [[nodiscard]] Duration tick() const { return tick_; }
  [[nodiscard]] size_t bucketCount() const { return numBuckets_; }
  // Bytes held by the slot tables (their capacity, bucket heads included).
  [[nodiscard]] size_t tableBytes() const;
  // What one entry takes in the tables: its link and its weak_ptr.
  [[nodiscard]] static constexpr size_t bytesPerEntry() {
    return sizeof(Link) + sizeof(std::weak_ptr<TcpConnection>);
  }

 private:
  // Bucket heads and entries alike: a circular doubly-linked list through
  // the heads (slots [0, numBuckets_)). prev == kNoEntry marks a free slot,
  // whose `next` links the free list.
  struct Link {
    Entry prev;
    Entry next;
    uint32_t tick;  // of the last touch; wraps, and is only compared for equality
  };

  void moveToNewest(Entry e) {
    unlink(e);
    linkNewest(e);
  }
  void unlink(Entry e) {
    const Link& link = links_[e];
    links_[link.prev].next = link.next;
    links_[link.next].prev = link.prev;
  }
  void linkNewest(Entry e) {
    Link& head = links_[newest_];
    Link& link = links_[e];
    link.prev = head.prev;
    link.next = newest_;
    link.tick = tickCount_;
    links_[head.prev].next = e;
    head.prev = e;
  }
  void release(Entry e);
  void startTimer();
  [[nodiscard]] bool onLoopThread() const;

  EventLoop* loop_;
  const Duration timeout_;
  const Duration tick_;
  const Entry numBuckets_;
  ExpireCallback expire_;
  std::vector<Link> links_;
  std::vector<std::weak_ptr<TcpConnection>> conns_;  // by slot; empty for heads and free slots
  Entry newest_ = 0;                                 // the bucket of the current tick
  uint32_t tickCount_ = 0;                           // ticks so far, mod 2^32
  Entry freeHead_ = kNoEntry;
  size_t size_ = 0;
  TimerId timer_;
};

}  // namespace libnet
